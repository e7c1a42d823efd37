import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/config.js'
import { bearer, DEMO, DEMO_PASSWORD, obtainTokens, useTestApp } from '../helpers/app.js'

const context = useTestApp()
const { roles, titles } = DEMO
const ROUTE_9 = '/api/v1/marketplace/:company_role_id/title/:title_id/documents'

const exposition = () => context.app.metrics.registry.metrics()

/** The value of one series, `name{labels}`, in the exposition text; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe('Prometheus metrics (issue 19)', () => {
  it('times requests by method, route pattern and status class, never by URL', async () => {
    const { access } = await obtainTokens(context.app, 'bob@beta.example', DEMO_PASSWORD)
    const url = `/api/v1/marketplace/${roles.betaBuyer}/title/${titles.t1}/documents`
    expect((await context.app.inject({ method: 'GET', url, headers: bearer(access) })).statusCode).toBe(200)
    expect((await context.app.inject({ method: 'GET', url, headers: bearer(access) })).statusCode).toBe(200)
    expect((await context.app.inject({ method: 'GET', url: `/nowhere/${titles.t1}` })).statusCode).toBe(404)
    const text = await exposition()
    const labels = `method="GET",route="${ROUTE_9}",status_class="2xx"`
    expect(sample(text, `http_request_duration_seconds_count{${labels}}`)).toBe(2)
    expect(sample(text, `http_request_duration_seconds_bucket{le="+Inf",${labels}}`)).toBe(2)
    expect(sample(text, 'http_request_duration_seconds_count{method="GET",route="unmatched",status_class="4xx"}')).toBe(1)
    // No id, e-mail or token anywhere in the labels.
    for (const secretish of [titles.t1, roles.betaBuyer, 'bob@beta.example', access]) expect(text).not.toContain(secretish)
  })

  it('counts login throttle decisions, refresh outcomes and webhook rejections', async () => {
    const { refresh } = await obtainTokens(context.app, 'bob@beta.example', DEMO_PASSWORD)
    const rotate = (token: string) => context.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })
    const next = await rotate(refresh)
    expect(next.statusCode).toBe(200)
    expect((await rotate(refresh)).statusCode).toBe(200) // a retry within the grace
    expect((await rotate(next.json<{ refresh: string }>().refresh)).statusCode).toBe(200)
    expect((await rotate(refresh)).statusCode).toBe(401) // its successor was used: a replay
    expect((await context.app.inject({ method: 'POST', url: '/webhook/esign/wrong-secret', payload: {} })).statusCode).toBe(404)
    const text = await exposition()
    expect(sample(text, 'login_throttle_decisions_total{decision="allowed"}')).toBeGreaterThanOrEqual(1)
    expect(sample(text, 'refresh_token_rotations_total{outcome="rotated"}')).toBeGreaterThanOrEqual(1)
    expect(sample(text, 'refresh_token_rotations_total{outcome="retried"}')).toBe(1)
    expect(sample(text, 'refresh_token_rotations_total{outcome="replay_revoked"}')).toBe(1)
    expect(sample(text, 'webhook_deliveries_total{outcome="rejected"}')).toBe(1)
    expect(text).toContain('password_hash_queue_depth 0')
    expect(text).toContain('password_hash_queue_wait_seconds_count')
  })
})

describe('METRICS_PORT', () => {
  const port = (value: string | undefined) => loadConfig({ NODE_ENV: 'test', ...(value === undefined ? {} : { METRICS_PORT: value }) }).metricsPort
  it('defaults to 9464; empty or 0 serves no metrics', () => {
    expect(port(undefined)).toBe(9464)
    expect(port('9100')).toBe(9100)
    expect(port('')).toBeUndefined()
    expect(port('0')).toBeUndefined()
  })
  it('refuses what is not a port', () => {
    expect(() => port('70000')).toThrow(ConfigError)
    expect(() => port('nine')).toThrow(ConfigError)
  })
})
