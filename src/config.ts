import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { Value } from '@sinclair/typebox/value'
import { EnvironmentSchema, type Environment } from '../schemas/config.js'

export type JwtAlgorithm = 'HS256' | 'RS256' | 'EdDSA'

export type JwtKeys =
  | { algorithm: 'HS256'; secret: string }
  | { algorithm: 'RS256' | 'EdDSA'; privateKey: string; publicKey: string; publicKeyObject: KeyObject }

export type TrustProxy = boolean | number | string[]

export interface Config {
  env: 'development' | 'production' | 'test'
  port: number
  host: string
  databaseUrl: string | undefined
  databasePoolSize: number
  /** Named prepared statements (off behind a pooler that does not keep sessions, e.g. PgBouncer in transaction mode). */
  databasePreparedStatements: boolean
  pgliteDir: string
  jwt: JwtKeys & { issuer: string | undefined; audience: string | undefined }
  accessTokenTtl: number
  refreshTokenTtl: number
  refreshAbsoluteTtl: number
  legacySecretKey: string
  legacySecretKeyFallbacks: string[]
  linkTtl: number
  esignWebhookSecrets: string[]
  esignWebhookHmacKey: string | undefined
  redisUrl: string | undefined
  trustProxy: TrustProxy
  logLevel: string
  /** Seconds: whole request received (slow bodies end as 408), idle keep-alive, idle socket. */
  http: { requestTimeout: number; keepAliveTimeout: number; connectionTimeout: number }
  loginThrottle: { perClient: number; perAccount: number; perAddress: number; windowSeconds: number }
  /** A failed login is answered no sooner than this many ms after it began, whatever the stored hash. */
  loginFailureMinMs: number
  /** Password hashes allowed to wait per hashing thread; beyond, a login is 503 at once. */
  passwordHashQueuePerThread: number
  /** Port of the Prometheus metrics server (GET /metrics), apart from the API's; undefined: no metrics served. */
  metricsPort: number | undefined
  /** Nice value (0 to 19) for every thread but the event loop's, password hashing's among them; 0 leaves them alone. */
  helperThreadNiceness: number
}

/** Demo secrets: refused in production unless ALLOW_DEMO_SECRETS=true. */
export const DEMO_SECRETS = {
  JWT_SIGNING_KEY: 'demo-jwt-signing-key-change-me-in-production-0000',
  LEGACY_SECRET_KEY: 'demo-legacy-secret',
  ESIGN_WEBHOOK_SECRETS: 'demo-esign-secret',
} as const

export class ConfigError extends Error {
  override name = 'ConfigError'
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 }

export function parseDuration(text: string): number {
  const match = /^([0-9]+)([smhd]?)$/.exec(text)
  if (!match) throw new ConfigError(`not a duration: ${text}`)
  return Number(match[1]) * (UNIT_SECONDS[match[2] || 's'] ?? 1)
}

function parseTrustProxy(text: string | undefined): TrustProxy {
  if (text === undefined || text === 'false') return false
  if (text === 'true') return true
  if (/^[0-9]+$/.test(text)) return Number(text)
  return splitList(text)
}

function splitList(text: string | undefined): string[] {
  return (text ?? '').split(',').map((item) => item.trim()).filter(Boolean)
}

function describeErrors(env: Record<string, unknown>): string {
  return [...Value.Errors(EnvironmentSchema, env)]
    .map((error) => `${error.path.slice(1) || '(environment)'}: ${error.message}`)
    .join('; ')
}

function loadJwtKeys(env: Environment, secret: string | undefined): JwtKeys {
  if (env.JWT_PRIVATE_KEY || env.JWT_PUBLIC_KEY) {
    if (!env.JWT_PRIVATE_KEY || !env.JWT_PUBLIC_KEY) {
      throw new ConfigError('JWT_PRIVATE_KEY and JWT_PUBLIC_KEY go together')
    }
    const privateKey = env.JWT_PRIVATE_KEY.replace(/\\n/g, '\n')
    const publicKey = env.JWT_PUBLIC_KEY.replace(/\\n/g, '\n')
    let keyType: string | undefined
    let publicKeyObject: KeyObject
    try {
      keyType = createPrivateKey(privateKey).asymmetricKeyType
      publicKeyObject = createPublicKey(publicKey)
    } catch {
      throw new ConfigError('JWT_PRIVATE_KEY / JWT_PUBLIC_KEY: not PEM keys')
    }
    if (keyType === 'ed25519') return { algorithm: 'EdDSA', privateKey, publicKey, publicKeyObject }
    if (keyType === 'rsa') return { algorithm: 'RS256', privateKey, publicKey, publicKeyObject }
    throw new ConfigError(`JWT_PRIVATE_KEY: unsupported key type ${keyType ?? 'unknown'} (use Ed25519 or RSA)`)
  }
  if (!secret) throw new ConfigError('JWT_SIGNING_KEY: required')
  return { algorithm: 'HS256', secret }
}

/**
 * In production every secret must be the operator's own: missing or demo values stop the start,
 * whatever the database, unless ALLOW_DEMO_SECRETS=true says a demo is meant. All offending
 * variables are named at once so that one failed start is enough to fix them.
 */
function checkProductionSecrets(env: Environment): void {
  if (env.NODE_ENV !== 'production' || env.ALLOW_DEMO_SECRETS === 'true') return
  const offending = (Object.keys(DEMO_SECRETS) as (keyof typeof DEMO_SECRETS)[]).filter((name) => {
    if (name === 'JWT_SIGNING_KEY' && env.JWT_PRIVATE_KEY) return false
    const value = env[name]
    return value === undefined || splitList(value).some((item) => item === DEMO_SECRETS[name])
  })
  if (offending.length > 0) {
    throw new ConfigError(
      `${offending.join(', ')}: required in production, and not the demo values ` +
        '(set them, or ALLOW_DEMO_SECRETS=true to run a demo with the documented demo secrets)',
    )
  }
}

/** METRICS_PORT: 9464 (Prometheus' registered port for exporters) when unset; empty or 0 serves no metrics. */
function metricsPortOf(raw: string | undefined, validated: string | undefined): number | undefined {
  if (raw === '') return undefined
  const port = Number(validated ?? 9464)
  if (port > 65535) throw new ConfigError('METRICS_PORT: must be at most 65535')
  return port === 0 ? undefined : port
}

/**
 * Validates the environment and returns typed settings. Secrets fall back to documented demo values
 * outside production (see checkProductionSecrets).
 */
export function loadConfig(rawEnv: NodeJS.ProcessEnv = process.env): Config {
  const env = Object.fromEntries(
    Object.keys(EnvironmentSchema.properties).flatMap((key) =>
      rawEnv[key] === undefined || rawEnv[key] === '' ? [] : [[key, rawEnv[key]]],
    ),
  )
  if (!Value.Check(EnvironmentSchema, env)) {
    throw new ConfigError(`invalid environment: ${describeErrors(env)}`)
  }
  checkProductionSecrets(env)
  const secret = (name: keyof typeof DEMO_SECRETS): string => env[name] ?? DEMO_SECRETS[name]

  const port = Number(env.PORT ?? 3000)
  if (env.REQUEST_TIMEOUT !== undefined && parseDuration(env.REQUEST_TIMEOUT) === 0) {
    throw new ConfigError('REQUEST_TIMEOUT: must be at least 1s (a body sent slowly would hold its connection forever)')
  }
  if (port > 65535) throw new ConfigError('PORT: must be at most 65535')
  const metricsPort = metricsPortOf(rawEnv.METRICS_PORT, env.METRICS_PORT)
  const loginWindow = parseDuration(env.LOGIN_FAILURE_WINDOW ?? '15m')
  return {
    env: env.NODE_ENV ?? 'development',
    port,
    host: env.HOST ?? '0.0.0.0',
    databaseUrl: env.DATABASE_URL,
    databasePoolSize: Number(env.DATABASE_POOL_SIZE ?? 10),
    databasePreparedStatements: env.DATABASE_PREPARED_STATEMENTS !== 'false',
    pgliteDir: env.PGLITE_DIR ?? './data/pglite',
    jwt: { ...loadJwtKeys(env, secret('JWT_SIGNING_KEY')), issuer: env.JWT_ISSUER, audience: env.JWT_AUDIENCE },
    accessTokenTtl: parseDuration(env.ACCESS_TOKEN_TTL ?? '5m'),
    refreshTokenTtl: parseDuration(env.REFRESH_TOKEN_TTL ?? '1d'),
    refreshAbsoluteTtl: parseDuration(env.REFRESH_ABSOLUTE_TTL ?? '30d'),
    legacySecretKey: secret('LEGACY_SECRET_KEY'),
    legacySecretKeyFallbacks: splitList(env.LEGACY_SECRET_KEY_FALLBACKS),
    linkTtl: parseDuration(env.LINK_TTL ?? '3d'),
    esignWebhookSecrets: splitList(secret('ESIGN_WEBHOOK_SECRETS')),
    esignWebhookHmacKey: env.ESIGN_WEBHOOK_HMAC_KEY,
    redisUrl: env.REDIS_URL,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    logLevel: env.LOG_LEVEL ?? 'info',
    http: {
      requestTimeout: parseDuration(env.REQUEST_TIMEOUT ?? '30s'),
      // Above the usual gateway idle timeouts (nginx's upstream 60 s): the gateway closes first, so it
      // never sends a request on a connection the service is closing.
      keepAliveTimeout: parseDuration(env.KEEP_ALIVE_TIMEOUT ?? '65s'),
      connectionTimeout: parseDuration(env.CONNECTION_TIMEOUT ?? '120s'),
    },
    loginThrottle: {
      perClient: Number(env.LOGIN_FAILURES_PER_CLIENT ?? 5),
      perAccount: Number(env.LOGIN_FAILURES_PER_ACCOUNT ?? 20),
      perAddress: Number(env.LOGIN_FAILURES_PER_ADDRESS ?? 30),
      windowSeconds: loginWindow,
    },
    loginFailureMinMs: Number(env.LOGIN_FAILURE_MIN_MS ?? 500),
    passwordHashQueuePerThread: Number(env.PASSWORD_HASH_QUEUE_PER_THREAD ?? 8),
    helperThreadNiceness: Number(env.HELPER_THREAD_NICENESS ?? 10),
    metricsPort,
  }
}
