import { afterEach, describe, expect, it } from 'vitest'
import { DEMO, DEMO_PASSWORD } from '../helpers/app.js'
import { freePort } from '../helpers/ports.js'
import { PROMETHEUS, prometheusAvailable, startPrometheus, type PrometheusRun, type Vector } from '../helpers/prometheus.js'
import { useServerProcesses } from '../helpers/server-process.js'

const available = prometheusAvailable()
if (!available) console.warn(`skipping the Prometheus scrape test: no \`${PROMETHEUS}\` binary on PATH (apt-get install -y prometheus)`)

const ROUTE_9 = '/api/v1/marketplace/:company_role_id/title/:title_id/documents'

const processes = useServerProcesses()

describe.skipIf(!available)('a real Prometheus scraping the service and evaluating the alert rules (issues 19, 29)', () => {
  let prometheus: PrometheusRun | undefined
  afterEach(async () => {
    await prometheus?.stop()
    prometheus = undefined
  })

  it("sees the target up, and route 9's request-duration series after a request to it", async () => {
    const metricsPort = await freePort()
    const service = await processes.start({ METRICS_PORT: String(metricsPort) })
    prometheus = await startPrometheus({ targets: [`127.0.0.1:${metricsPort}`] })
    const running = prometheus

    const login = await fetch(`${service.baseUrl}/api/auth/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bob@beta.example', password: DEMO_PASSWORD }),
    })
    const { access } = (await login.json()) as { access: string }
    const documents = await fetch(`${service.baseUrl}/api/v1/marketplace/${DEMO.roles.betaBuyer}/title/${DEMO.titles.t1}/documents`, {
      headers: { authorization: `Bearer ${access}` },
    })
    expect(documents.status).toBe(200)

    type Targets = { activeTargets: { health: string; scrapeUrl: string; labels: Record<string, string> }[] }
    const target = await running.until('the target to be up', async () => {
      const data = await running.query<Targets>('/api/v1/targets')
      return data?.activeTargets.find((candidate) => candidate.health === 'up')
    })
    expect(target.scrapeUrl).toBe(`http://127.0.0.1:${metricsPort}/metrics`)

    const selector = encodeURIComponent(`http_request_duration_seconds_count{route="${ROUTE_9}",method="GET",status_class="2xx"}`)
    const series = await running.until('the route 9 series', async () => {
      const data = await running.query<Vector>(`/api/v1/query?query=${selector}`)
      return data?.result[0]
    })
    expect(series.metric).toMatchObject({ job: 'receivables-api', route: ROUTE_9, status_class: '2xx' })
    expect(Number(series.value[1])).toBeGreaterThanOrEqual(1)

    // The alert rules load and evaluate: route 9's error ratio is recorded, not absent (its 5xx
    // series exists from its first request; NaN while no request came between two scrapes), and
    // no rule fails.
    const errors = encodeURIComponent(`route:slo_errors:ratio_rate5m{route="${ROUTE_9}",method="GET"}`)
    const ratio = await running.until(
      'the recorded error ratio',
      async () => (await running.query<Vector>(`/api/v1/query?query=${errors}`))?.result[0],
    )
    expect(['0', 'NaN']).toContain(ratio.value[1])
    type Rules = { groups: { rules: { name: string; health: string; lastError?: string }[] }[] }
    const rules = (await running.query<Rules>('/api/v1/rules'))?.groups.flatMap((group) => group.rules) ?? []
    expect(rules.length).toBeGreaterThanOrEqual(20)
    expect(rules.filter((rule) => rule.health === 'err')).toEqual([])

    // The process and event-loop collectors are scraped too.
    const lag = await running.until(
      'event-loop lag',
      async () => (await running.query<Vector>('/api/v1/query?query=nodejs_eventloop_lag_seconds'))?.result[0],
    )
    expect(Number(lag.value[1])).toBeGreaterThanOrEqual(0)
    // The pool's, on PostgreSQL (the embedded database has no pool).
    if (process.env.TEST_DATABASE_URL) {
      const total = await running.until(
        'the pool gauge',
        async () => (await running.query<Vector>('/api/v1/query?query=db_pool_connections%7Bstate%3D%22total%22%7D'))?.result[0],
      )
      expect(Number(total.value[1])).toBeGreaterThanOrEqual(1)
    }
  })
})
