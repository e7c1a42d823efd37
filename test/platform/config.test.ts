import { generateKeyPairSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ConfigError, DEMO_SECRETS, loadConfig, parseDuration } from '../../src/config.js'

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
    const config = loadConfig({ ESIGN_WEBHOOK_SECRETS: 'a, b ,,c', TRUST_PROXY: '2', LEGACY_SECRET_KEY_FALLBACKS: 'old1,old2' })
    expect(config.esignWebhookSecrets).toEqual(['a', 'b', 'c'])
    expect(config.legacySecretKeyFallbacks).toEqual(['old1', 'old2'])
    expect(config.trustProxy).toBe(2)
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1' }).trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1'])
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
    expect(() => loadConfig(production)).toThrowError('JWT_SIGNING_KEY, LEGACY_SECRET_KEY, ESIGN_WEBHOOK_SECRETS: required in production')
    expect(() => loadConfig({ ...production, JWT_SIGNING_KEY: 'k'.repeat(40) })).toThrowError('LEGACY_SECRET_KEY')
    const complete = loadConfig({
      ...production,
      JWT_SIGNING_KEY: 'k'.repeat(40),
      LEGACY_SECRET_KEY: 'legacy',
      ESIGN_WEBHOOK_SECRETS: 'hook',
    })
    expect(complete.esignWebhookSecrets).toEqual(['hook'])
  })

  it('refuses demo secrets in production whatever the database, naming every offending variable', () => {
    const message = /^JWT_SIGNING_KEY, LEGACY_SECRET_KEY, ESIGN_WEBHOOK_SECRETS: required in production.*ALLOW_DEMO_SECRETS=true/
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrowError(message)
    // Spelling out the demo values is no better than leaving them out.
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        JWT_SIGNING_KEY: DEMO_SECRETS.JWT_SIGNING_KEY,
        LEGACY_SECRET_KEY: 'legacy',
        ESIGN_WEBHOOK_SECRETS: `rotated,${DEMO_SECRETS.ESIGN_WEBHOOK_SECRETS}`,
      }),
    ).toThrowError(/^JWT_SIGNING_KEY, ESIGN_WEBHOOK_SECRETS: required/)
    expect(loadConfig({ NODE_ENV: 'production', ALLOW_DEMO_SECRETS: 'true' }).jwt).toMatchObject({
      secret: DEMO_SECRETS.JWT_SIGNING_KEY,
    })
    expect(() => loadConfig({ NODE_ENV: 'production', ALLOW_DEMO_SECRETS: 'yes' })).toThrowError('ALLOW_DEMO_SECRETS')
  })

  it('refuses the demo signing key among JWT_SIGNING_KEY_FALLBACKS in production: a fallback still verifies tokens', () => {
    const own = { NODE_ENV: 'production', JWT_SIGNING_KEY: 'k'.repeat(40), LEGACY_SECRET_KEY: 'legacy', ESIGN_WEBHOOK_SECRETS: 'hook' }
    expect(() => loadConfig({ ...own, JWT_SIGNING_KEY_FALLBACKS: `${'o'.repeat(40)},${DEMO_SECRETS.JWT_SIGNING_KEY}` })).toThrowError(
      /^JWT_SIGNING_KEY_FALLBACKS: required in production/,
    )
    expect(loadConfig({ ...own, JWT_SIGNING_KEY_FALLBACKS: ` ${'o'.repeat(40)} ` }).jwt.secretFallbacks).toEqual(['o'.repeat(40)])
  })

  it('takes PEM keys in production in place of a JWT signing secret', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519', {
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    })
    const config = loadConfig({
      NODE_ENV: 'production',
      JWT_PRIVATE_KEY: privateKey,
      JWT_PUBLIC_KEY: publicKey,
      LEGACY_SECRET_KEY: 'legacy',
      ESIGN_WEBHOOK_SECRETS: 'hook',
    })
    expect(config.jwt.algorithm).toBe('EdDSA')
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
  })
})
