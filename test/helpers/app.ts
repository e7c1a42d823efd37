import type { FastifyInstance, FastifyPluginAsync, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, beforeEach } from 'vitest'
import { buildApp, type BuildOptions } from '../../src/app.js'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import { loadConfig, type Config } from '../../src/config.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { resetDatabase, testDatabase } from './database.js'
import { recordConformance } from './openapi-conformance.js'
import { scaled } from './slowness.js'
import { TEST_SECRETS } from './secrets.js'

export { DEMO } from '../../db/seed/ids.js'
import { DEMO_PASSWORD } from '../../db/seed/demo.js'
export { DEMO_PASSWORD, LEGACY_DEMO_PASSWORD } from '../../db/seed/demo.js'

export function testConfig(env: Record<string, string> = {}): Config {
  // No floor on failed logins unless a test asks for one: it would only make the suite wait. The
  // test run's own secrets (test/helpers/secrets.ts), never the demo's: the rule they obey is the product's.
  // HANDLER_TIMEOUT: its default 10 s stretched on a slow machine, where a login alone can outlast it
  // (a 503 no test meant); the tests of that bound set their own.
  const handlerTimeout = `${Math.ceil(scaled(10_000) / 1000)}s`
  return loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', LOGIN_FAILURE_MIN_MS: '0', HANDLER_TIMEOUT: handlerTimeout, ...TEST_SECRETS, ...env })
}

export interface TestAppOptions extends Omit<BuildOptions, 'database'> {
  /** The app's database: the worker's shared one unless given; `'config'`: the app opens its own from DATABASE_URL. */
  database?: DatabaseHandle | 'config' | undefined
  /** More routes, registered after the app's own (a test's throwaway route). */
  extraRoutes?: FastifyPluginAsync | undefined
  /** Check every answer against the OpenAPI document (default); off for throwaway routes the document cannot describe. */
  conformance?: boolean | undefined
}

/** An app on the worker's shared database, with its own login-failure counters. */
export async function buildTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<FastifyInstance> {
  const { extraRoutes, conformance = true, database, ...buildOptions } = options
  const app = await buildApp(testConfig(env), {
    counterStore: new MemoryCounterStore(),
    ...buildOptions,
    ...(database === 'config' ? {} : { database: database ?? (await testDatabase()) }),
  })
  try {
    if (extraRoutes) await app.register(extraRoutes)
    if (conformance) recordConformance(app)
    await app.ready()
  } catch (error) {
    // An app refusing to start (a test of the start-up checks) still lets go of what it opened.
    await app.close().catch(() => undefined)
    throw error
  }
  return app
}

/**
 * The usual frame of a test file: one app for the file, demo data reset before every test.
 * Read `context.app` inside tests and hooks.
 */
export function useTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): { app: FastifyInstance } {
  const context = {} as { app: FastifyInstance }
  const counters = new MemoryCounterStore()
  beforeAll(async () => {
    context.app = await buildTestApp(env, { counterStore: counters, ...options })
  })
  beforeEach(async () => {
    // Presence is written after each answer: the last test's writes land before the reset.
    await context.app.presence.settled()
    await resetDatabase()
    context.app.presence.forget()
    counters.clear()
  })
  afterAll(async () => {
    await context.app?.close()
  })
  return context
}

export interface Tokens {
  access: string
  refresh: string
}

export async function obtainTokens(app: FastifyInstance, email: string, password: string): Promise<Tokens> {
  const response = await app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email, password } })
  if (response.statusCode !== 200) throw new Error(`login of ${email} failed: ${response.statusCode} ${response.body}`)
  return response.json<Tokens>()
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/**
 * Access tokens of demo users (password Demo#2026!), each logged in at most once per test: logins
 * are slow (argon2id), and the database is reset between tests.
 */
export function perTestTokens(context: { app: FastifyInstance }): (email: string) => Promise<string> {
  let tokens = new Map<string, Promise<string>>()
  beforeEach(() => {
    tokens = new Map()
  })
  return (email) => {
    let token = tokens.get(email)
    if (!token) tokens.set(email, (token = obtainTokens(context.app, email, DEMO_PASSWORD).then((pair) => pair.access)))
    return token
  }
}

/** Asserts the problem-details shape of docs/api.md §1 and returns the body. */
export function problemOf(response: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  const body = response.json<Record<string, unknown>>()
  const shape = {
    status: response.statusCode,
    contentType: response.headers['content-type'],
    code: body.code,
    bodyStatus: body.status,
    hasDetail: typeof body.detail === 'string' && body.detail.length > 0,
    hasTitle: typeof body.title === 'string',
    hasType: typeof body.type === 'string',
  }
  const expected = {
    status,
    contentType: 'application/problem+json; charset=utf-8',
    code,
    bodyStatus: status,
    hasDetail: true,
    hasTitle: true,
    hasType: true,
  }
  if (JSON.stringify(shape) !== JSON.stringify(expected)) {
    throw new Error(`expected problem ${status} ${code}, got ${JSON.stringify(shape)}: ${response.body}`)
  }
  if (status === 401 && response.headers['www-authenticate'] !== 'Bearer realm="api"') {
    throw new Error('a 401 must carry WWW-Authenticate: Bearer realm="api"')
  }
  return body
}
