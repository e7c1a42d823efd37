import { generateKeyPairSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ConfigError, DEMO_SECRETS, loadConfig, loadConfirmationLinkSettings, loadSeedSettings, parseDuration } from '../../src/config.js'

/** Secrets of an operator's own, at the production minimums (src/secret-strength.ts). */
const STRONG = {
  jwt: 'Zq3vL9xT2mR7wK4pN8cB1fH6jD5sG0aY',
  legacy: 'k#8v!q2@z$w5^m9&x3*p7(r1)t6_y4-n0=b+c%d;e:f<g>h?j.',
  hook: 'u7Wn2Kx9Qe4Rb6Tz1Ym8Lp3Vc5Hs0JdA',
}
const STRONG_ENV = { JWT_SIGNING_KEY: STRONG.jwt, LEGACY_SECRET_KEY: STRONG.legacy, ESIGN_WEBHOOK_SECRETS: STRONG.hook }

describe('configuration', () => {
  it('has documented defaults and demo secrets for the embedded database', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({
      port: 3000,
      accessTokenTtl: 300,
      refreshTokenTtl: 86_400,
      refreshAbsoluteTtl: 30 * 86_400,
      linkTtl: 3 * 86_400,
      legacySecretKey: DEMO_SECRETS.LEGACY_SECRET_KEY,
      esignWebhookSecrets: [DEMO_SECRETS.ESIGN_WEBHOOK_SECRETS],
      trustProxy: false,
      jwt: { algorithm: 'HS256', secret: DEMO_SECRETS.JWT_SIGNING_KEY },
    })
  })

  it('reads durations, lists and proxy settings', () => {
    expect(parseDuration('90')).toBe(90)
    expect(parseDuration('5m')).toBe(300)
    expect(parseDuration('2h')).toBe(7200)
    expect(parseDuration('30d')).toBe(2_592_000)
    const config = loadConfig({ ESIGN_WEBHOOK_SECRETS: 'a,b,,c', TRUST_PROXY: '2', LEGACY_SECRET_KEY_FALLBACKS: 'old1,old2' })
    expect(config.esignWebhookSecrets).toEqual(['a', 'b', 'c'])
    expect(config.legacySecretKeyFallbacks).toEqual(['old1', 'old2'])
    expect(config.trustProxy).toBe(2)
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1' }).trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1'])
  })

  it('refuses TRUST_PROXY=true or a hop count in production, which trust every peer: addresses or CIDRs only (issue 42, item 11)', () => {
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', ...STRONG_ENV }
    for (const trustProxy of ['true', '1', '2']) {
      expect(() => loadConfig({ ...production, TRUST_PROXY: trustProxy })).toThrowError(
        new RegExp(`^TRUST_PROXY: ${trustProxy} lets every peer set X-Forwarded-For, refused in production: list the gateway's addresses or CIDRs`),
      )
      expect(loadConfig({ TRUST_PROXY: trustProxy }).trustProxy).toBe(trustProxy === 'true' ? true : Number(trustProxy))
    }
    expect(loadConfig({ ...production, TRUST_PROXY: '10.0.0.5,fd00::/64' }).trustProxy).toEqual(['10.0.0.5', 'fd00::/64'])
    expect(loadConfig({ ...production, TRUST_PROXY: 'false' }).trustProxy).toBe(false)
  })

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ ACCESS_TOKEN_TTL: '5 minutes' }, 'ACCESS_TOKEN_TTL'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ JWT_SIGNING_KEY: 'short' }, 'JWT_SIGNING_KEY'],
    [{ JWT_PRIVATE_KEY: 'x' }, 'JWT_PUBLIC_KEY'],
    [{ JWT_SIGNING_KEY_FALLBACKS: `${'k'.repeat(40)},short` }, 'JWT_SIGNING_KEY_FALLBACKS'],
    [{ JWT_PUBLIC_KEY_FALLBACKS: 'not a key' }, 'JWT_PUBLIC_KEY_FALLBACKS'],
  ])('stops on a bad value and names it: %o', (env, name) => {
    expect(() => loadConfig(env)).toThrowError(ConfigError)
    expect(() => loadConfig(env)).toThrowError(name)
  })

  it('requires real secrets in production on a real database', () => {
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app' }
    expect(() => loadConfig(production)).toThrowError(/^JWT_SIGNING_KEY: required; LEGACY_SECRET_KEY: required; ESIGN_WEBHOOK_SECRETS: required \(/)
    expect(() => loadConfig({ ...production, JWT_SIGNING_KEY: STRONG.jwt })).toThrowError(/^LEGACY_SECRET_KEY: required/)
    const complete = loadConfig({ ...production, ...STRONG_ENV })
    expect(complete.esignWebhookSecrets).toEqual([STRONG.hook])
    expect(complete.demoData).toBe(false)
  })

  it('refuses demo secrets in production whatever the database, naming every offending variable', () => {
    const message =
      /^DATABASE_URL: required in production.*; JWT_SIGNING_KEY: required; LEGACY_SECRET_KEY: required; ESIGN_WEBHOOK_SECRETS: required \(/
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrowError(message)
    // Spelling out the demo values is no better than leaving them out.
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        DATABASE_URL: 'postgres://db/app',
        JWT_SIGNING_KEY: DEMO_SECRETS.JWT_SIGNING_KEY,
        LEGACY_SECRET_KEY: STRONG.legacy,
        ESIGN_WEBHOOK_SECRETS: `${STRONG.hook},${DEMO_SECRETS.ESIGN_WEBHOOK_SECRETS}`,
      }),
    ).toThrowError(/^JWT_SIGNING_KEY: a demo value; ESIGN_WEBHOOK_SECRETS: item 2 a demo value \(/)
    // The embedded demo in production (ALLOW_DEMO_DATA=true) still needs secrets of its own.
    expect(() => loadConfig({ NODE_ENV: 'production', ALLOW_DEMO_DATA: 'true' })).toThrowError(/^JWT_SIGNING_KEY: required; /)
  })

  it('refuses missing or demo secrets on any DATABASE_URL whatever NODE_ENV says, naming each and how to make one (issue 33, item 2)', () => {
    for (const nodeEnv of [undefined, 'development', 'test', 'production']) {
      const env = { DATABASE_URL: 'postgres://db/app', ...(nodeEnv ? { NODE_ENV: nodeEnv } : {}) }
      const missing = () => loadConfig(env)
      expect(missing, nodeEnv).toThrowError(ConfigError)
      expect(missing, nodeEnv).toThrowError(/^JWT_SIGNING_KEY: required; LEGACY_SECRET_KEY: required; ESIGN_WEBHOOK_SECRETS: required \(/)
      expect(missing, nodeEnv).toThrowError('`openssl rand -hex 32`')
      expect(() =>
        loadConfig({
          ...env,
          ...STRONG_ENV,
          LEGACY_SECRET_KEY: DEMO_SECRETS.LEGACY_SECRET_KEY,
          ESIGN_WEBHOOK_SECRETS: DEMO_SECRETS.ESIGN_WEBHOOK_SECRETS,
        }),
      ).toThrowError(/^LEGACY_SECRET_KEY: a demo value; ESIGN_WEBHOOK_SECRETS: a demo value \(/)
      expect(loadConfig({ ...env, ...STRONG_ENV }).legacySecretKey).toBe(STRONG.legacy)
    }
    // The demo values belong to the embedded database outside production, and only there.
    expect(loadConfig({ NODE_ENV: 'test' }).legacySecretKey).toBe(DEMO_SECRETS.LEGACY_SECRET_KEY)
    expect(loadConfig({ NODE_ENV: 'development', DATABASE_URL: '' }).jwt).toMatchObject({ secret: DEMO_SECRETS.JWT_SIGNING_KEY })
  })

  it('no longer reads ALLOW_DEMO_SECRETS: demo secrets never reach production, and the refusal says so (issue 33, item 2)', () => {
    const demo = { NODE_ENV: 'production', ALLOW_DEMO_SECRETS: 'true', ALLOW_DEMO_DATA: 'true', ...DEMO_SECRETS }
    expect(() => loadConfig(demo)).toThrowError(
      /^JWT_SIGNING_KEY: a demo value; LEGACY_SECRET_KEY: a demo value; ESIGN_WEBHOOK_SECRETS: a demo value \(/,
    )
    expect(() => loadConfig(demo)).toThrowError('ALLOW_DEMO_SECRETS is no longer read')
    expect(() => loadConfig({ ...demo, DATABASE_URL: 'postgres://db/app', NODE_ENV: 'development' })).toThrowError(/^JWT_SIGNING_KEY: a demo value/)
  })

  it('refuses weak secrets in production, fallbacks included, and not in development (issue 26, items 3 and 4)', () => {
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', ...STRONG_ENV }
    const cases: [Record<string, string>, string][] = [
      [{ ESIGN_WEBHOOK_SECRETS: 'a' }, 'ESIGN_WEBHOOK_SECRETS: shorter than 32 characters'],
      [{ LEGACY_SECRET_KEY: 'a' }, 'LEGACY_SECRET_KEY: shorter than 50 characters'],
      [{ ESIGN_WEBHOOK_HMAC_KEY: 'a' }, 'ESIGN_WEBHOOK_HMAC_KEY: shorter than 32 characters'],
      [{ ESIGN_WEBHOOK_SECRETS: 'DEMO-ESIGN-SECRET' }, 'ESIGN_WEBHOOK_SECRETS: a demo value'],
      [{ JWT_SIGNING_KEY: 'k'.repeat(40) }, 'JWT_SIGNING_KEY: fewer than 8 different characters'],
      [{ LEGACY_SECRET_KEY_FALLBACKS: 'demo-legacy-secret' }, 'LEGACY_SECRET_KEY_FALLBACKS: a demo value'],
      [{ LEGACY_SECRET_KEY_FALLBACKS: `${STRONG.legacy},short` }, 'LEGACY_SECRET_KEY_FALLBACKS: item 2 shorter than 50 characters'],
    ]
    for (const [env, reason] of cases) {
      expect(() => loadConfig({ ...production, ...env }), reason).toThrowError(`${reason} (secrets of your own`)
      expect(loadConfig({ ...env, NODE_ENV: 'development' }).env).toBe('development')
    }
    expect(loadConfig({ ...production, ESIGN_WEBHOOK_HMAC_KEY: STRONG.hook }).esignWebhookHmacKey).toBe(STRONG.hook)
  })

  it('refuses the embedded database in production unless ALLOW_DEMO_DATA=true (issue 26, item 1)', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', ...STRONG_ENV })).toThrowError(
      /^DATABASE_URL: required in production \(or ALLOW_DEMO_DATA=true to serve the embedded demo and its public logins\)$/,
    )
    expect(loadConfig({ NODE_ENV: 'production', ALLOW_DEMO_DATA: 'true', ...STRONG_ENV }).demoData).toBe(true)
    expect(loadConfig({}).demoData).toBe(true)
    expect(() => loadConfig({ NODE_ENV: 'production', ALLOW_DEMO_DATA: 'yes' })).toThrowError('ALLOW_DEMO_DATA')
  })

  it('refuses the demo signing key or a weak key among JWT_SIGNING_KEY_FALLBACKS in production: a fallback still verifies tokens', () => {
    const own = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', ...STRONG_ENV }
    expect(() => loadConfig({ ...own, JWT_SIGNING_KEY_FALLBACKS: `${STRONG.jwt.slice(1)}x,${DEMO_SECRETS.JWT_SIGNING_KEY}` })).toThrowError(
      /^JWT_SIGNING_KEY_FALLBACKS: item 2 a demo value/,
    )
    expect(() => loadConfig({ ...own, JWT_SIGNING_KEY_FALLBACKS: 'o'.repeat(40) })).toThrowError(/^JWT_SIGNING_KEY_FALLBACKS: /)
    expect(loadConfig({ ...own, JWT_SIGNING_KEY_FALLBACKS: `${STRONG.jwt}x` }).jwt.secretFallbacks).toEqual([`${STRONG.jwt}x`])
  })

  it('refuses a secret or key with whitespace around it (or an item of it) anywhere, naming the variable (issue 42, item 2)', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519', {
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    })
    const cases: [string, string][] = [
      ['JWT_SIGNING_KEY', ` ${DEMO_SECRETS.JWT_SIGNING_KEY}`],
      ['JWT_SIGNING_KEY', `${DEMO_SECRETS.JWT_SIGNING_KEY}\t`],
      ['JWT_SIGNING_KEY', `${STRONG.jwt} `],
      ['LEGACY_SECRET_KEY', `\t${STRONG.legacy}`],
      ['ESIGN_WEBHOOK_SECRETS', `${STRONG.hook} `],
      ['ESIGN_WEBHOOK_SECRETS', `${STRONG.hook}, ${DEMO_SECRETS.ESIGN_WEBHOOK_SECRETS}`],
      ['ESIGN_WEBHOOK_HMAC_KEY', `${STRONG.hook} `],
      ['JWT_SIGNING_KEY_FALLBACKS', ` ${STRONG.jwt}x`],
      ['LEGACY_SECRET_KEY_FALLBACKS', `${STRONG.legacy}x ,${STRONG.legacy}y`],
      ['JWT_PRIVATE_KEY', ` ${privateKey}`],
      ['JWT_PUBLIC_KEY', `${publicKey}\t`],
      ['JWT_PUBLIC_KEY_FALLBACKS', `${publicKey}, ${publicKey}`],
    ]
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', ...STRONG_ENV }
    const keyPair = { JWT_PRIVATE_KEY: privateKey, JWT_PUBLIC_KEY: publicKey }
    for (const [name, value] of cases) {
      for (const env of [production, {}, { ...production, ...keyPair }]) {
        expect(() => loadConfig({ ...env, [name]: value }), `${name}=${JSON.stringify(value)}`).toThrowError(
          new RegExp(`(^|; )${name}: (item [0-9] has )?leading or trailing whitespace`),
        )
      }
    }
    // A PEM key ends with its line break (as written or escaped), which is not whitespace around it.
    expect(privateKey.endsWith('\n')).toBe(true)
    const escaped = { JWT_PRIVATE_KEY: privateKey.replace(/\n/g, '\\n'), JWT_PUBLIC_KEY: publicKey.replace(/\n/g, '\\n') }
    for (const pair of [keyPair, escaped]) {
      expect(loadConfig({ ...production, ...pair, JWT_PUBLIC_KEY_FALLBACKS: `${publicKey},${publicKey}` }).jwt.algorithm).toBe('EdDSA')
    }
  })

  it('refuses ALLOW_DEMO_DATA=false as no permission: no demo data in production, the embedded database refused (issue 42, test b)', () => {
    const production = { NODE_ENV: 'production', ...STRONG_ENV, ALLOW_DEMO_DATA: 'false' }
    expect(() => loadConfig(production)).toThrowError(/^DATABASE_URL: required in production/)
    expect(loadConfig({ ...production, DATABASE_URL: 'postgres://db/app' })).toMatchObject({ demoData: false, allowDemoData: false })
    expect(loadConfig({ ALLOW_DEMO_DATA: 'false' })).toMatchObject({ demoData: true, allowDemoData: false })
    expect(() => loadSeedSettings({ NODE_ENV: 'production', ALLOW_DEMO_DATA: 'false' })).toThrowError(/^ALLOW_DEMO_DATA: /)
    expect(loadSeedSettings({ NODE_ENV: 'development', ALLOW_DEMO_DATA: 'false' }).allowDemoData).toBe(false)
    expect(loadConfirmationLinkSettings({ NODE_ENV: 'production', ALLOW_DEMO_DATA: 'false', LEGACY_SECRET_KEY: STRONG.legacy }).demoData).toBe(false)
  })

  it('takes PEM keys in production in place of a JWT signing secret', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519', {
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    })
    const config = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://db/app',
      JWT_PRIVATE_KEY: privateKey,
      JWT_PUBLIC_KEY: publicKey,
      LEGACY_SECRET_KEY: STRONG.legacy,
      ESIGN_WEBHOOK_SECRETS: STRONG.hook,
    })
    expect(config.jwt.algorithm).toBe('EdDSA')
  })
})

describe('PUBLIC_BASE_URL (issue 33, item 13)', () => {
  it('is an absolute http(s) URL, kept without its trailing slash', () => {
    expect(loadConfig({}).publicBaseUrl).toBeUndefined()
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://api.platform.example/' }).publicBaseUrl).toBe('https://api.platform.example')
    expect(loadConfig({ PUBLIC_BASE_URL: 'http://127.0.0.1:3000/receivables' }).publicBaseUrl).toBe('http://127.0.0.1:3000/receivables')
    for (const value of [
      'api.platform.example',
      '/receivables',
      'ftp://api.platform.example',
      'https://user:pw@api.platform.example',
      'https://api.platform.example/?a=1',
      'https://api.platform.example/#top',
    ]) {
      expect(() => loadConfig({ PUBLIC_BASE_URL: value }), value).toThrowError('PUBLIC_BASE_URL')
    }
  })
})

describe('database settings', () => {
  it('uses prepared statements unless told not to', () => {
    expect(loadConfig({}).databasePreparedStatements).toBe(true)
    expect(loadConfig({ DATABASE_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements).toBe(false)
    expect(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: 'no' })).toThrowError('DATABASE_PREPARED_STATEMENTS')
  })

  it('bounds every wait on the database, a request and the shutdown, with defaults', () => {
    expect(parseDuration('500ms')).toBe(0.5)
    expect(loadConfig({})).toMatchObject({
      databaseConnectTimeoutMs: 2_000,
      databaseStatementTimeoutMs: 5_000,
      handlerTimeoutMs: 10_000,
      drain: { delayMs: 5_000, shutdownTimeoutMs: 25_000 },
    })
    expect(loadConfig({ DATABASE_STATEMENT_TIMEOUT: '800ms', DRAIN_DELAY: '0', SHUTDOWN_TIMEOUT: '10s' })).toMatchObject({
      databaseStatementTimeoutMs: 800,
      drain: { delayMs: 0, shutdownTimeoutMs: 10_000 },
    })
    expect(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT: '0' })).toThrowError('DATABASE_STATEMENT_TIMEOUT')
    expect(() => loadConfig({ DRAIN_DELAY: '20s', SHUTDOWN_TIMEOUT: '20s' })).toThrowError('SHUTDOWN_TIMEOUT')
    expect(() => loadConfig({ LOGIN_BURST_WAIT: '10s' })).toThrowError('LOGIN_BURST_WAIT')
    expect(loadConfig({ LOGIN_BURST_WAIT: '12s', HANDLER_TIMEOUT: '15s' }).loginThrottle.burstWaitMs).toBe(12_000)
    expect(loadConfig({ HANDLER_TIMEOUT: '3s' }).loginThrottle.burstWaitMs).toBe(2000)
    expect(loadConfig({}).loginThrottle.burstWaitMs).toBe(5000)
  })

  it('reads replicas from DATABASE_REPLICA_URLS, none by default, only beside DATABASE_URL (issue 35)', () => {
    expect(loadConfig({})).toMatchObject({ databaseReplicaUrls: [], databaseReplicaMaxLagMs: 5_000 })
    const primary = { ...STRONG_ENV, DATABASE_URL: 'postgres://db/app' }
    expect(
      loadConfig({ ...primary, DATABASE_REPLICA_URLS: 'postgres://r1/app, postgresql://r2:5433/app', DATABASE_REPLICA_MAX_LAG: '2s' }),
    ).toMatchObject({ databaseReplicaUrls: ['postgres://r1/app', 'postgresql://r2:5433/app'], databaseReplicaMaxLagMs: 2_000 })
    expect(() => loadConfig({ DATABASE_REPLICA_URLS: 'postgres://r1/app' })).toThrowError('DATABASE_REPLICA_URLS: needs DATABASE_URL')
    expect(() => loadConfig({ ...primary, DATABASE_REPLICA_URLS: 'mysql://r1/app' })).toThrowError('DATABASE_REPLICA_URLS')
    expect(() => loadConfig({ ...primary, DATABASE_REPLICA_MAX_LAG: '500ms' })).toThrowError('DATABASE_REPLICA_MAX_LAG')
  })
})

describe('the Idempotency-Key quota (issue 33, item 9)', () => {
  it('defaults to 10,000 new keys per caller per hour, takes both variables, and refuses a window under a second', () => {
    expect(loadConfig({}).idempotencyKeyQuota).toEqual({ perCaller: 10_000, windowSeconds: 3600 })
    expect(loadConfig({ IDEMPOTENCY_KEYS_PER_CALLER: '50', IDEMPOTENCY_KEY_WINDOW: '10m' }).idempotencyKeyQuota).toEqual({
      perCaller: 50,
      windowSeconds: 600,
    })
    expect(() => loadConfig({ IDEMPOTENCY_KEY_WINDOW: '500ms' })).toThrowError(/^IDEMPOTENCY_KEY_WINDOW: must be at least 1s/)
    expect(() => loadConfig({ IDEMPOTENCY_KEYS_PER_CALLER: '0' })).toThrowError(/IDEMPOTENCY_KEYS_PER_CALLER/)
  })
})
