import { beforeEach, describe, expect, it } from 'vitest'
import { useTwoInstances, type Instance } from '../helpers/instances.js'
import { useServerProcesses, type ServerProcess } from '../helpers/server-process.js'
import { bearer, DEMO_PASSWORD, obtainTokens, problemOf } from '../helpers/app.js'

describe('two instances of the service on one database', () => {
  const two = useTwoInstances()

  const refresh = (instance: Instance | undefined, token: string) =>
    instance?.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })

  it('detects a refresh token replayed on the other instance and revokes the family on both', async () => {
    const [first, second] = two.instances
    const tokens = await obtainTokens(first?.app as never, 'alice@acme.example', DEMO_PASSWORD)
    const rotated = await refresh(first, tokens.refresh)
    expect(rotated?.statusCode).toBe(200)
    const used = await refresh(first, rotated?.json().refresh) // the successor used: no grace left for the first token
    expect(used?.statusCode).toBe(200)
    problemOf((await refresh(second, tokens.refresh)) as never, 401, 'token_not_valid')
    const next = used?.json()
    problemOf((await refresh(first, next.refresh)) as never, 401, 'token_not_valid')
    const read = await second?.app.inject({ method: 'GET', url: '/api/company/v1/get-user-companies', headers: bearer(next.access) })
    problemOf(read as never, 401, 'token_not_valid')
  })

  it('spends a refresh token presented to two instances at once once: both get the one successor (a retry within the grace)', async () => {
    const [first, second] = two.instances
    const tokens = await obtainTokens(first?.app as never, 'bob@beta.example', DEMO_PASSWORD)
    const responses = await Promise.all([refresh(first, tokens.refresh), refresh(second, tokens.refresh)])
    expect(responses.map((response) => response?.statusCode)).toEqual([200, 200])
    expect(responses[0]?.json().refresh).toBe(responses[1]?.json().refresh)
  })
})

describe('two service processes sharing the login-failure counters through Redis', () => {
  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
  const processes = useServerProcesses()
  let servers: ServerProcess[] = []

  beforeEach(async () => {
    const env = { REDIS_URL: redisUrl, LOGIN_FAILURES_PER_CLIENT: '3', LOGIN_FAILURE_WINDOW: '60', LOG_LEVEL: 'warn' }
    servers = await Promise.all([processes.start(env), processes.start(env)])
  })

  it('blocks on one process what failed on the other, with Retry-After', async () => {
    // A fresh e-mail per run: the counters outlive the processes in Redis.
    const email = `shared-${process.pid}-${Date.now()}@acme.example`
    const attempt = (server: ServerProcess | undefined) =>
      fetch(`${server?.baseUrl}/api/auth/v1/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'wrong' }),
      })
    for (const server of [servers[0], servers[1], servers[0]]) expect((await attempt(server)).status).toBe(401)
    const blocked = await attempt(servers[1])
    expect(blocked.status).toBe(429)
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(blocked.headers.get('content-type')).toBe('application/problem+json; charset=utf-8')
  })
})
