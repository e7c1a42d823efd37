import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { Type, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { EnvironmentSchema, type Environment } from '../schemas/config.js'
import { type KeyFormat, listItems, PRODUCTION_SECRET_RULES, variableWeakness, whitespaceProblem } from './secret-strength.js'

/** A public key tokens were signed with before (JWT_PUBLIC_KEY_FALLBACKS): it still verifies and stays in the JWKS. */
export interface JwtPublicKey {
  algorithm: 'RS256' | 'EdDSA'
  publicKey: string
  publicKeyObject: KeyObject
}

/** Keys that verify tokens but sign none: JWT_SIGNING_KEY_FALLBACKS (HS256) and JWT_PUBLIC_KEY_FALLBACKS. */
export interface JwtFallbacks {
  secretFallbacks: string[]
  publicKeyFallbacks: JwtPublicKey[]
}

type JwtSigningKeys =
  { algorithm: 'HS256'; secret: string } | { algorithm: 'RS256' | 'EdDSA'; privateKey: string; publicKey: string; publicKeyObject: KeyObject }

export type JwtKeys = JwtSigningKeys & JwtFallbacks

export type TrustProxy = boolean | number | string[]

export interface Config {
  env: 'development' | 'production' | 'test'
  port: number
  host: string
  databaseUrl: string | undefined
  databasePoolSize: number
  /** Named prepared statements (off behind a pooler that does not keep sessions, e.g. PgBouncer in transaction mode). */
  databasePreparedStatements: boolean
  /** Milliseconds to get a connection from the pool, connecting included; beyond, the request is 503. */
  databaseConnectTimeoutMs: number
  /** Milliseconds a statement may take, measured by the service (works through a pooler) and sent as statement_timeout. */
  databaseStatementTimeoutMs: number
  /** Streaming replicas the reads' tenancy statements run on (DATABASE_REPLICA_URLS; empty: every read on the primary). */
  databaseReplicaUrls: string[]
  /** Milliseconds of replay lag beyond which a replica is skipped until it catches up. */
  databaseReplicaMaxLagMs: number
  /** Milliseconds a route's handling may take before the answer is 503 (0: no bound). */
  handlerTimeoutMs: number
  /** Shutdown: milliseconds of serving on (with Connection: close) after SIGTERM, and the bound of the whole shutdown. */
  drain: { delayMs: number; shutdownTimeoutMs: number }
  pgliteDir: string
  /**
   * kidCutoverMs: when tokens began to carry a `kid` (JWT_KID_CUTOVER); a token without one is tried
   * with each key only until the longest token lifetime has passed since (src/tokens/tokens.ts).
   * Undefined: this process's start, before which every token without `kid` was issued.
   */
  jwt: JwtKeys & { issuer: string | undefined; audience: string | undefined; kidCutoverMs: number | undefined }
  accessTokenTtl: number
  refreshTokenTtl: number
  refreshAbsoluteTtl: number
  /** Seconds after a rotation in which the spent refresh token, presented again, gets its unused successor again (0: off). */
  refreshReuseGrace: number
  legacySecretKey: string
  legacySecretKeyFallbacks: string[]
  linkTtl: number
  /** Whether demo data may be loaded (a new embedded database, `seed`): always outside production, there only with ALLOW_DEMO_DATA=true. */
  demoData: boolean
  /** ALLOW_DEMO_DATA=true, said: what a database marked production needs to serve the demo accounts, whatever NODE_ENV. */
  allowDemoData: boolean
  esignWebhookSecrets: string[]
  esignWebhookHmacKey: string | undefined
  redisUrl: string | undefined
  /** Where partners reach this API (PUBLIC_BASE_URL), without a trailing slash: /docs/json's server, confirmation-link's URLs. */
  publicBaseUrl: string | undefined
  trustProxy: TrustProxy
  logLevel: string
  /** Seconds: whole request received (slow bodies end as 408), idle keep-alive, idle socket. */
  http: { requestTimeout: number; keepAliveTimeout: number; connectionTimeout: number }
  /** burstWaitMs: how long a login waits for the attempts in flight that hold a limit, before 429. */
  loginThrottle: { perClient: number; perAccount: number; perAddress: number; windowSeconds: number; burstWaitMs: number }
  /** New Idempotency-Keys a caller (user, or route 10's link) may have kept per window; beyond, 429. */
  idempotencyKeyQuota: { perCaller: number; windowSeconds: number }
  /** Seconds a place (/24, /64) stays familiar to an account after a login from it; 0: no familiar places. */
  loginFamiliarTtl: number
  /** IPv6 clients are counted by this prefix (a subscriber), IPv4 ones by their address (src/lib/client-address.ts). */
  addressIpv6Prefix: number
  /** A failed login is answered no sooner than this many ms after it began, whatever the stored hash. */
  loginFailureMinMs: number
  /** Password hashes allowed to wait per hashing thread; beyond, a login is 503 at once. */
  passwordHashQueuePerThread: number
  /** Port of the Prometheus metrics server (GET /metrics), apart from the API's; undefined: no metrics served. */
  metricsPort: number | undefined
  /** Where the metrics server listens: loopback unless told (it shows the Node version, heap and counters). */
  metricsHost: string
  /** Nice value (0 to 19) for every thread but the event loop's, password hashing's among them; 0 leaves them alone. */
  helperThreadNiceness: number
  /** Per principal and class of route (src/fairness/): requests per window, requests at once; when the instance sheds load. */
  fairness: FairnessSettings
}

export type RateClass = 'reads' | 'writes' | 'authentication' | 'webhooks'
export interface FairnessSettings {
  /** Requests per window per principal; `rejected`: 401s per address (no token, a forged one, a disabled user). */
  rateLimits: Record<RateClass | 'rejected', number>
  windowSeconds: number
  concurrencyLimits: Record<RateClass, number>
  /** Where load shedding starts (reads at part of it: src/fairness/shedder.ts); undefined: never. */
  shed: { inFlight: number; eventLoopDelayMs: number; poolWaiting: number } | undefined
}

/** Demo secrets, published: the embedded demo database's outside production, refused anywhere else (in any case). */
export const DEMO_SECRETS = {
  JWT_SIGNING_KEY: 'demo-jwt-signing-key-change-me-in-production-0000',
  LEGACY_SECRET_KEY: 'demo-legacy-secret',
  ESIGN_WEBHOOK_SECRETS: 'demo-esign-secret',
} as const

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** The window must hold at least a second: the counters' windows are whole milliseconds from their first key. */
function idempotencyKeyQuotaOf(env: Environment): Config['idempotencyKeyQuota'] {
  const windowSeconds = parseDuration(env.IDEMPOTENCY_KEY_WINDOW ?? '1h')
  if (windowSeconds < 1) throw new ConfigError('IDEMPOTENCY_KEY_WINDOW: must be at least 1s')
  return { perCaller: Number(env.IDEMPOTENCY_KEYS_PER_CALLER ?? 10_000), windowSeconds }
}

/** `name=number,…` over defaults: every name the schema allows has one. */
function namedNumbers<T extends Record<string, number>>(text: string | undefined, defaults: T): T {
  const values: Record<string, number> = { ...defaults }
  for (const item of text ? splitList(text) : []) {
    const [name, value] = item.split('=')
    values[name!] = Number(value)
  }
  return values as T
}

function fairnessOf(env: Environment): FairnessSettings {
  const windowSeconds = parseDuration(env.RATE_LIMIT_WINDOW ?? '10s')
  if (windowSeconds < 1) throw new ConfigError('RATE_LIMIT_WINDOW: must be at least 1s')
  // An ordinary partner never meets them: 300 reads a second per user, 64 at once.
  const rateLimits = namedNumbers(env.RATE_LIMITS, { reads: 3000, writes: 1000, authentication: 3000, webhooks: 3000, rejected: 1000 })
  const concurrencyLimits = namedNumbers(env.CONCURRENCY_LIMITS, { reads: 64, writes: 32, authentication: 64, webhooks: 64 })
  const shedding = namedNumbers(env.LOAD_SHED === 'off' ? undefined : env.LOAD_SHED, { in_flight: 512, event_loop_delay_ms: 1000, pool_waiting: 64 })
  const shed =
    env.LOAD_SHED === 'off'
      ? undefined
      : { inFlight: shedding.in_flight, eventLoopDelayMs: shedding.event_loop_delay_ms, poolWaiting: shedding.pool_waiting }
  return { rateLimits, windowSeconds, concurrencyLimits, shed }
}

/** Demo data is public logins: production loads it only when ALLOW_DEMO_DATA=true says a demo is meant. */
function demoDataAllowed(env: Environment): boolean {
  return env.NODE_ENV !== 'production' || env.ALLOW_DEMO_DATA === 'true'
}

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 }

/** Seconds (fractional for `ms`). */
export function parseDuration(text: string): number {
  const match = /^([0-9]+)(ms|[smhd]?)$/.exec(text)
  if (!match) throw new ConfigError(`not a duration: ${text}`)
  return Number(match[1]) * (UNIT_SECONDS[match[2] || 's'] ?? 1)
}

function parseTrustProxy(text: string | undefined): TrustProxy {
  if (text === undefined || text === 'false') return false
  if (text === 'true') return true
  if (/^[0-9]+$/.test(text)) return Number(text)
  return splitList(text)
}

/**
 * `true` or a hop count trusts every peer's X-Forwarded-For: anyone who reaches the service picks
 * the address its limits count. Production takes the gateway's addresses or CIDRs only (issue 42, item 11).
 */
function trustProxyOf(env: Environment): TrustProxy {
  const trustProxy = parseTrustProxy(env.TRUST_PROXY)
  if (env.NODE_ENV === 'production' && (trustProxy === true || typeof trustProxy === 'number')) {
    throw new ConfigError(
      `TRUST_PROXY: ${env.TRUST_PROXY} lets every peer set X-Forwarded-For, refused in production: list the gateway's addresses or CIDRs (e.g. TRUST_PROXY=10.0.0.5)`,
    )
  }
  return trustProxy
}

function splitList(text: string | undefined): string[] {
  return listItems(text ?? '')
}

function describeErrors(schema: TSchema, env: Record<string, unknown>): string {
  return [...Value.Errors(schema, env)].map((error) => `${error.path.slice(1) || '(environment)'}: ${error.message}`).join('; ')
}

type EnvironmentName = keyof Environment & string

/**
 * The environment's set values among `names` (all the service reads by default), validated: an
 * unset or empty variable is left out, a bad value throws a ConfigError that names it.
 */
function readEnvironment(rawEnv: NodeJS.ProcessEnv, names?: readonly EnvironmentName[]): Environment {
  const schema = names ? Type.Pick(EnvironmentSchema, [...names]) : EnvironmentSchema
  const env = Object.fromEntries(
    Object.keys(schema.properties as Record<string, unknown>).flatMap((key) =>
      rawEnv[key] === undefined || rawEnv[key] === '' ? [] : [[key, rawEnv[key]]],
    ),
  )
  if (!Value.Check(schema, env)) {
    throw new ConfigError(`invalid environment: ${describeErrors(schema, env)}`)
  }
  return env as Environment
}

const pemOf = (text: string): string => text.replace(/\\n/g, '\n')

/** The algorithm an asymmetric key signs with, or undefined for a key type the service does not use. */
function algorithmOf(key: KeyObject): 'RS256' | 'EdDSA' | undefined {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA'
  return key.asymmetricKeyType === 'rsa' ? 'RS256' : undefined
}

/** JWT_KID_CUTOVER in ms since the epoch: a date (midnight UTC) or a time with its offset, not in the future. */
function kidCutoverOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const ms = Date.parse(text)
  // Date.parse rolls an impossible day over (2026-02-30 is 2 March); the date must read back as written.
  if (Number.isNaN(ms) || (text.length === 10 && new Date(ms).toISOString().slice(0, 10) !== text)) {
    throw new ConfigError(`JWT_KID_CUTOVER: not a date or time: ${text}`)
  }
  if (ms > Date.now()) throw new ConfigError('JWT_KID_CUTOVER: must not be in the future (it is when tokens began to carry a kid)')
  return ms
}

/** Previous keys, kept for verification while the tokens they signed live (docs/operations.md, key rotation). */
function loadJwtFallbacks(env: Environment): JwtFallbacks {
  const secretFallbacks = splitList(env.JWT_SIGNING_KEY_FALLBACKS)
  if (secretFallbacks.some((secret) => secret.length < 32))
    throw new ConfigError('JWT_SIGNING_KEY_FALLBACKS: each key must be at least 32 characters')
  // PEM has no commas: the list is comma-separated like every other.
  const publicKeyFallbacks = splitList(env.JWT_PUBLIC_KEY_FALLBACKS).map((text, index) => {
    const publicKey = pemOf(text)
    let publicKeyObject: KeyObject
    try {
      publicKeyObject = createPublicKey(publicKey)
    } catch {
      throw new ConfigError(`JWT_PUBLIC_KEY_FALLBACKS: item ${index + 1} is not a PEM public key`)
    }
    const algorithm = algorithmOf(publicKeyObject)
    if (!algorithm) throw new ConfigError(`JWT_PUBLIC_KEY_FALLBACKS: item ${index + 1} is neither Ed25519 nor RSA`)
    return { algorithm, publicKey, publicKeyObject }
  })
  return { secretFallbacks, publicKeyFallbacks }
}

function loadJwtKeys(env: Environment, secret: string | undefined): JwtKeys {
  return { ...loadJwtSigningKeys(env, secret), ...loadJwtFallbacks(env) }
}

function loadJwtSigningKeys(env: Environment, secret: string | undefined): JwtSigningKeys {
  if (env.JWT_PRIVATE_KEY || env.JWT_PUBLIC_KEY) {
    if (!env.JWT_PRIVATE_KEY || !env.JWT_PUBLIC_KEY) {
      throw new ConfigError('JWT_PRIVATE_KEY and JWT_PUBLIC_KEY go together')
    }
    const privateKey = pemOf(env.JWT_PRIVATE_KEY)
    const publicKey = pemOf(env.JWT_PUBLIC_KEY)
    let privateKeyObject: KeyObject
    let publicKeyObject: KeyObject
    try {
      privateKeyObject = createPrivateKey(privateKey)
      publicKeyObject = createPublicKey(publicKey)
    } catch {
      throw new ConfigError('JWT_PRIVATE_KEY / JWT_PUBLIC_KEY: not PEM keys')
    }
    const algorithm = algorithmOf(privateKeyObject)
    if (algorithm) return { algorithm, privateKey, publicKey, publicKeyObject }
    throw new ConfigError(`JWT_PRIVATE_KEY: unsupported key type ${privateKeyObject.asymmetricKeyType ?? 'unknown'} (use Ed25519 or RSA)`)
  }
  if (!secret) throw new ConfigError('JWT_SIGNING_KEY: required')
  return { algorithm: 'HS256', secret }
}

type SecretName = keyof typeof PRODUCTION_SECRET_RULES

/** Secrets the service cannot run without off the embedded demo (JWT_SIGNING_KEY unless a key pair is given). */
const REQUIRED_SECRETS = ['JWT_SIGNING_KEY', 'LEGACY_SECRET_KEY', 'ESIGN_WEBHOOK_SECRETS'] as const
const ALL_SECRETS = Object.keys(PRODUCTION_SECRET_RULES) as SecretName[]

/**
 * Whether the secrets must be the operator's own: in production, and on any DATABASE_URL whatever
 * NODE_ENV says. The demo values are published, so they serve the embedded demo database only: on a
 * real database they would let anyone sign tokens, confirmation links and e-signature events.
 */
const ownSecretsRequired = (env: Environment): boolean => env.NODE_ENV === 'production' || env.DATABASE_URL !== undefined

/** Why each of `names` is unfit, as `NAME: reason`: missing (where required), a demo value, or weak. */
function secretProblems(env: Environment, names: readonly SecretName[]): string[] {
  return names.flatMap((name) => {
    const value = env[name]
    if (value === undefined || listItems(value).length === 0) {
      const required = (REQUIRED_SECRETS as readonly string[]).includes(name) && !(name === 'JWT_SIGNING_KEY' && env.JWT_PRIVATE_KEY)
      return required ? [`${name}: required`] : []
    }
    const weakness = variableWeakness(value, PRODUCTION_SECRET_RULES[name], { demoValues: Object.values(DEMO_SECRETS) })
    return weakness ? [`${name}: ${weakness}`] : []
  })
}

/** The variables holding keys beside the secrets: PEM, whose whitespace is checked too. */
const KEY_FORMATS: Partial<Record<EnvironmentName, KeyFormat>> = {
  JWT_PRIVATE_KEY: { pem: true },
  JWT_PUBLIC_KEY: { pem: true },
  JWT_PUBLIC_KEY_FALLBACKS: { pem: true, list: true },
}

/** `NAME: reason` for each of `names` written with whitespace around it (or an item), refused anywhere. */
function whitespaceProblems(env: Environment, names: readonly EnvironmentName[]): string[] {
  return names.flatMap((name) => {
    const value = env[name]
    const format = KEY_FORMATS[name] ?? (PRODUCTION_SECRET_RULES as Partial<Record<EnvironmentName, KeyFormat>>)[name] ?? {}
    const problem = typeof value === 'string' ? whitespaceProblem(value, format) : undefined
    return problem ? [`${name}: ${problem}`] : []
  })
}

/** How to fix a refusal of secrets, said once after the list of them. */
const OWN_SECRETS_HINT =
  'secrets of your own, in production and on any DATABASE_URL: the demo values serve the embedded demo database only; ' +
  "make each with `openssl rand -hex 32` (LEGACY_SECRET_KEY: the old platform's SECRET_KEY, if 50 characters or more); " +
  'minimums in docs/operations.md'

/**
 * In production and on any DATABASE_URL every secret must be the operator's own and strong
 * (src/secret-strength.ts): missing, demo or weak values stop the start. In production the embedded
 * database, which is the demo's, also needs ALLOW_DEMO_DATA=true. Every problem is named at once so
 * that one failed start is enough to fix them. ALLOW_DEMO_SECRETS, which let the demo values into
 * production, is gone (docs/decisions.md); a deployment still setting it is told.
 */
function checkSecrets(env: Environment, rawEnv: NodeJS.ProcessEnv, names: readonly SecretName[] = ALL_SECRETS, database = true): void {
  const keys = names === ALL_SECRETS ? (Object.keys(KEY_FORMATS) as EnvironmentName[]) : []
  const problems = whitespaceProblems(env, [...names, ...keys])
  if (database && env.NODE_ENV === 'production' && env.DATABASE_URL === undefined && !demoDataAllowed(env)) {
    problems.push('DATABASE_URL: required in production (or ALLOW_DEMO_DATA=true to serve the embedded demo and its public logins)')
  }
  const secrets = ownSecretsRequired(env) ? secretProblems(env, names) : []
  if (secrets.length > 0) {
    const obsolete = rawEnv.ALLOW_DEMO_SECRETS ? '; ALLOW_DEMO_SECRETS is no longer read' : ''
    problems.push(`${secrets.join('; ')} (${OWN_SECRETS_HINT}${obsolete})`)
  }
  if (problems.length > 0) throw new ConfigError(problems.join('; '))
}

/**
 * PUBLIC_BASE_URL: an absolute http(s) URL with nothing but a host, port and path, kept without
 * its trailing slash; the one source of the public address (a request's Host header is the client's word).
 */
function publicBaseUrlOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new ConfigError(`PUBLIC_BASE_URL: not a URL: ${text}`)
  }
  if (url.username || url.password || url.search || url.hash || text.includes('#') || text.includes('?')) {
    throw new ConfigError('PUBLIC_BASE_URL: an http(s) URL with a host and an optional path only (no user, query or fragment)')
  }
  return url.toString().replace(/\/+$/, '')
}

/** METRICS_PORT: 9464 (Prometheus' registered port for exporters) when unset; empty or 0 serves no metrics. */
function metricsPortOf(raw: string | undefined, validated: string | undefined): number | undefined {
  if (raw === '') return undefined
  const port = Number(validated ?? 9464)
  if (port > 65535) throw new ConfigError('METRICS_PORT: must be at most 65535')
  return port === 0 ? undefined : port
}

const seconds = (value: string | undefined, fallback: string): number => parseDuration(value ?? fallback)
const milliseconds = (value: string | undefined, fallback: string): number => Math.round(seconds(value, fallback) * 1000)

function portOf(text: string | undefined): number {
  const port = Number(text ?? 3000)
  if (port > 65535) throw new ConfigError('PORT: must be at most 65535')
  return port
}

/** A stalled database would hang requests: its timeouts are above 0. */
function databaseTimeoutMs(text: string | undefined, fallback: string): number {
  const ms = milliseconds(text, fallback)
  if (ms === 0) {
    throw new ConfigError('DATABASE_CONNECT_TIMEOUT / DATABASE_STATEMENT_TIMEOUT: must be above 0 (a stalled database would hang requests)')
  }
  return ms
}

function databaseReplicaUrlsOf(env: Environment): string[] {
  const urls = (env.DATABASE_REPLICA_URLS ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '')
  if (urls.length > 0 && env.DATABASE_URL === undefined) {
    throw new ConfigError('DATABASE_REPLICA_URLS: needs DATABASE_URL (the primary); the embedded database has no replicas')
  }
  return urls
}

function databaseReplicaMaxLagMsOf(env: Environment): number {
  const ms = milliseconds(env.DATABASE_REPLICA_MAX_LAG, '5s')
  if (ms < 1000) throw new ConfigError('DATABASE_REPLICA_MAX_LAG: must be at least 1s (lag is measured once a second)')
  return ms
}

function drainOf(env: Environment): Config['drain'] {
  const drain = { delayMs: milliseconds(env.DRAIN_DELAY, '5s'), shutdownTimeoutMs: milliseconds(env.SHUTDOWN_TIMEOUT, '25s') }
  if (drain.shutdownTimeoutMs < drain.delayMs + 1000) {
    throw new ConfigError('SHUTDOWN_TIMEOUT: must exceed DRAIN_DELAY by at least 1s (requests in flight need time to finish)')
  }
  return drain
}

const handlerTimeoutMsOf = (env: Environment): number => milliseconds(env.HANDLER_TIMEOUT, '10s')

/**
 * A login waiting for its burst past the handler's bound would be answered 503 instead of served:
 * the default stays a second below HANDLER_TIMEOUT, a value set above that is refused.
 */
function loginBurstWaitMsOf(env: Environment): number {
  const handlerTimeoutMs = handlerTimeoutMsOf(env)
  const boundMs = handlerTimeoutMs > 0 ? Math.max(0, handlerTimeoutMs - 1000) : Infinity
  const waitMs = env.LOGIN_BURST_WAIT === undefined ? Math.min(5000, boundMs) : milliseconds(env.LOGIN_BURST_WAIT, '5s')
  if (waitMs > boundMs) {
    throw new ConfigError('LOGIN_BURST_WAIT: must stay at least 1s below HANDLER_TIMEOUT (a waiting login would be answered 503)')
  }
  return waitMs
}

function httpTimeoutsOf(env: Environment): Config['http'] {
  if (env.REQUEST_TIMEOUT !== undefined && parseDuration(env.REQUEST_TIMEOUT) === 0) {
    throw new ConfigError('REQUEST_TIMEOUT: must be at least 1s (a body sent slowly would hold its connection forever)')
  }
  return {
    requestTimeout: seconds(env.REQUEST_TIMEOUT, '30s'),
    // Above the usual gateway idle timeouts (nginx's upstream 60 s): the gateway closes first, so it
    // never sends a request on a connection the service is closing.
    keepAliveTimeout: seconds(env.KEEP_ALIVE_TIMEOUT, '65s'),
    connectionTimeout: seconds(env.CONNECTION_TIMEOUT, '120s'),
  }
}

/** The secrets fall back to their demo values on the embedded database outside production only (checkSecrets). */
const demoSecretOr = (env: Environment, name: keyof typeof DEMO_SECRETS): string => env[name] ?? DEMO_SECRETS[name]

/**
 * The table of settings: each of Config's fields and how it is read from the validated environment
 * (rawEnv: as set, for a variable whose empty value means something). A new setting is one more row.
 */
const SETTINGS: { [Key in keyof Config]: (env: Environment, rawEnv: NodeJS.ProcessEnv) => Config[Key] } = {
  env: (env) => env.NODE_ENV ?? 'development',
  http: httpTimeoutsOf,
  port: (env) => portOf(env.PORT),
  host: (env) => env.HOST ?? '0.0.0.0',
  metricsPort: (env, rawEnv) => metricsPortOf(rawEnv.METRICS_PORT, env.METRICS_PORT),
  metricsHost: (env) => env.METRICS_HOST ?? '127.0.0.1',
  drain: drainOf,
  databaseUrl: (env) => env.DATABASE_URL,
  databasePoolSize: (env) => Number(env.DATABASE_POOL_SIZE ?? 10),
  databasePreparedStatements: (env) => env.DATABASE_PREPARED_STATEMENTS !== 'false',
  databaseConnectTimeoutMs: (env) => databaseTimeoutMs(env.DATABASE_CONNECT_TIMEOUT, '2s'),
  databaseStatementTimeoutMs: (env) => databaseTimeoutMs(env.DATABASE_STATEMENT_TIMEOUT, '5s'),
  databaseReplicaUrls: databaseReplicaUrlsOf,
  databaseReplicaMaxLagMs: databaseReplicaMaxLagMsOf,
  handlerTimeoutMs: handlerTimeoutMsOf,
  pgliteDir: (env) => env.PGLITE_DIR ?? './data/pglite',
  jwt: (env) => ({
    ...loadJwtKeys(env, demoSecretOr(env, 'JWT_SIGNING_KEY')),
    issuer: env.JWT_ISSUER,
    audience: env.JWT_AUDIENCE,
    kidCutoverMs: kidCutoverOf(env.JWT_KID_CUTOVER),
  }),
  accessTokenTtl: (env) => seconds(env.ACCESS_TOKEN_TTL, '5m'),
  refreshTokenTtl: (env) => seconds(env.REFRESH_TOKEN_TTL, '1d'),
  refreshAbsoluteTtl: (env) => seconds(env.REFRESH_ABSOLUTE_TTL, '30d'),
  refreshReuseGrace: (env) => seconds(env.REFRESH_REUSE_GRACE, '30s'),
  legacySecretKey: (env) => demoSecretOr(env, 'LEGACY_SECRET_KEY'),
  legacySecretKeyFallbacks: (env) => splitList(env.LEGACY_SECRET_KEY_FALLBACKS),
  linkTtl: (env) => seconds(env.LINK_TTL, '3d'),
  demoData: demoDataAllowed,
  allowDemoData: (env) => env.ALLOW_DEMO_DATA === 'true',
  esignWebhookSecrets: (env) => splitList(demoSecretOr(env, 'ESIGN_WEBHOOK_SECRETS')),
  esignWebhookHmacKey: (env) => env.ESIGN_WEBHOOK_HMAC_KEY,
  redisUrl: (env) => env.REDIS_URL,
  publicBaseUrl: (env) => publicBaseUrlOf(env.PUBLIC_BASE_URL),
  trustProxy: trustProxyOf,
  logLevel: (env) => env.LOG_LEVEL ?? 'info',
  loginThrottle: (env) => ({
    perClient: Number(env.LOGIN_FAILURES_PER_CLIENT ?? 5),
    perAccount: Number(env.LOGIN_FAILURES_PER_ACCOUNT ?? 20),
    perAddress: Number(env.LOGIN_FAILURES_PER_ADDRESS ?? 30),
    windowSeconds: seconds(env.LOGIN_FAILURE_WINDOW, '15m'),
    burstWaitMs: loginBurstWaitMsOf(env),
  }),
  loginFamiliarTtl: (env) => seconds(env.LOGIN_FAMILIAR_TTL, '30d'),
  addressIpv6Prefix: (env) => Number(env.ADDRESS_IPV6_PREFIX ?? 64),
  idempotencyKeyQuota: idempotencyKeyQuotaOf,
  loginFailureMinMs: (env) => Number(env.LOGIN_FAILURE_MIN_MS ?? 500),
  passwordHashQueuePerThread: (env) => Number(env.PASSWORD_HASH_QUEUE_PER_THREAD ?? 8),
  helperThreadNiceness: (env) => Number(env.HELPER_THREAD_NICENESS ?? 10),
  fairness: fairnessOf,
}

/**
 * Validates the environment and returns typed settings, row by row of SETTINGS. Secrets fall back
 * to documented demo values on the embedded database outside production only (see checkSecrets).
 */
export function loadConfig(rawEnv: NodeJS.ProcessEnv = process.env): Config {
  const env = readEnvironment(rawEnv)
  checkSecrets(env, rawEnv)
  const entries = Object.entries(SETTINGS).map(([key, read]) => [key, (read as (e: Environment, r: NodeJS.ProcessEnv) => unknown)(env, rawEnv)])
  return Object.fromEntries(entries) as Config
}

/** Where the commands (migrate, seed, confirmation-link) find the database. */
export interface DatabaseSettings {
  databaseUrl: string | undefined
  pgliteDir: string
}

const DATABASE_VARIABLES = ['DATABASE_URL', 'PGLITE_DIR'] as const

function databaseSettings(env: Environment): DatabaseSettings {
  return { databaseUrl: env.DATABASE_URL, pgliteDir: env.PGLITE_DIR ?? './data/pglite' }
}

/**
 * `migrate` and `seed` read the database's location and nothing else: a deployment runs them with
 * the database's credentials only, without the service's secrets, and another setting's bad value
 * does not stop them.
 */
export function loadDatabaseSettings(rawEnv: NodeJS.ProcessEnv = process.env): DatabaseSettings {
  return databaseSettings(readEnvironment(rawEnv, DATABASE_VARIABLES))
}

/** `migrate` also reads NODE_ENV: under production it marks the database production (migration 0010). */
export function loadMigrateSettings(rawEnv: NodeJS.ProcessEnv = process.env): DatabaseSettings & { production: boolean } {
  const env = readEnvironment(rawEnv, [...DATABASE_VARIABLES, 'NODE_ENV'])
  return { ...databaseSettings(env), production: env.NODE_ENV === 'production' }
}

export interface ConfirmationLinkSettings extends DatabaseSettings {
  legacySecretKey: string
  /** Whether a new embedded database gets the demo data, as the service's start would give it. */
  demoData: boolean
  /** Seconds a link stays valid. */
  linkTtl: number
  /** PUBLIC_BASE_URL: the link is printed as a full URL on it, else as a path. */
  publicBaseUrl: string | undefined
}

/**
 * `confirmation-link` also needs the old platform's secret and the link's lifetime. The demo secret
 * signs links for the embedded demo only: on any DATABASE_URL, as in production, the secret must be
 * the one the service checks links with, else the link printed would be refused.
 */
export function loadConfirmationLinkSettings(rawEnv: NodeJS.ProcessEnv = process.env): ConfirmationLinkSettings {
  const env = readEnvironment(rawEnv, [...DATABASE_VARIABLES, 'NODE_ENV', 'ALLOW_DEMO_DATA', 'LEGACY_SECRET_KEY', 'LINK_TTL', 'PUBLIC_BASE_URL'])
  checkSecrets(env, rawEnv, ['LEGACY_SECRET_KEY'], false)
  return {
    ...databaseSettings(env),
    legacySecretKey: env.LEGACY_SECRET_KEY ?? DEMO_SECRETS.LEGACY_SECRET_KEY,
    demoData: demoDataAllowed(env),
    linkTtl: seconds(env.LINK_TTL, '3d'),
    publicBaseUrl: publicBaseUrlOf(env.PUBLIC_BASE_URL),
  }
}

/**
 * `seed` loads public logins: in production only with ALLOW_DEMO_DATA=true, whatever the database
 * (its secrets are not its business: the service checks them). `allowDemoData` is that explicit
 * word, which a database marked production also needs (src/cli/seed.ts).
 */
export function loadSeedSettings(rawEnv: NodeJS.ProcessEnv = process.env): DatabaseSettings & { allowDemoData: boolean } {
  const env = readEnvironment(rawEnv, [...DATABASE_VARIABLES, 'NODE_ENV', 'ALLOW_DEMO_DATA'])
  if (!demoDataAllowed(env)) {
    throw new ConfigError(
      'ALLOW_DEMO_DATA: the demo data (users with a public password) is refused in production; set ALLOW_DEMO_DATA=true to load it anyway',
    )
  }
  return { ...databaseSettings(env), allowDemoData: env.ALLOW_DEMO_DATA === 'true' }
}

/** `disable-user` also writes its audit event as a log line, at LOG_LEVEL. */
export function loadDisableUserSettings(rawEnv: NodeJS.ProcessEnv = process.env): DatabaseSettings & { logLevel: string } {
  const env = readEnvironment(rawEnv, [...DATABASE_VARIABLES, 'LOG_LEVEL'])
  return { ...databaseSettings(env), logLevel: env.LOG_LEVEL ?? 'info' }
}
