import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DEMO, DEMO_PASSWORD } from '../helpers/app.js'
import { freePort } from '../helpers/ports.js'
import { useServerProcesses } from '../helpers/server-process.js'

/** Debian's package (`apt-get install prometheus`; .ci/run installs it). */
const PROMETHEUS = 'prometheus'
const available = spawnSync(PROMETHEUS, ['--version']).status === 0
if (!available) console.warn(`skipping the Prometheus scrape test: no \`${PROMETHEUS}\` binary on PATH (apt-get install -y prometheus)`)

const ROUTE_9 = '/api/v1/marketplace/:company_role_id/title/:title_id/documents'

const processes = useServerProcesses()

interface PrometheusRun {
  child: ChildProcess
  url: string
  dir: string
  output: string[]
}

async function startPrometheus(metricsPort: number): Promise<PrometheusRun> {
  const dir = await mkdtemp(path.join(tmpdir(), 'receivables-prometheus-'))
  const config = [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 1s',
    '  evaluation_interval: 1s',
    // The rules compose.yaml's Prometheus evaluates, on this scrape (issue 29).
    'rule_files:',
    `  - ${path.resolve('deploy/prometheus/alerts.yml')}`,
    'scrape_configs:',
    '  - job_name: receivables-api',
    '    static_configs:',
    `      - targets: ['127.0.0.1:${metricsPort}']`,
  ].join('\n')
  await writeFile(path.join(dir, 'prometheus.yml'), `${config}\n`)
  const port = await freePort()
  const child = spawn(
    PROMETHEUS,
    [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const output: string[] = []
  child.stdout?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  child.stderr?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  return { child, url: `http://127.0.0.1:${port}`, dir, output }
}

async function query<T>(prometheus: PrometheusRun, pathAndQuery: string): Promise<T | undefined> {
  try {
    const response = await fetch(`${prometheus.url}${pathAndQuery}`)
    if (!response.ok) return undefined
    return ((await response.json()) as { data: T }).data
  } catch {
    return undefined // not listening yet
  }
}

async function until<T>(what: string, prometheus: PrometheusRun, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (prometheus.child.exitCode !== null) throw new Error(`prometheus exited (${prometheus.child.exitCode}):\n${prometheus.output.join('')}`)
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${prometheus.output.join('').slice(-2000)}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

describe.skipIf(!available)('a real Prometheus scraping the service and evaluating the alert rules (issues 19, 29)', () => {
  let prometheus: PrometheusRun | undefined
  afterEach(async () => {
    if (prometheus) {
      prometheus.child.kill('SIGKILL')
      await rm(prometheus.dir, { recursive: true, force: true })
      prometheus = undefined
    }
  })

  it("sees the target up, and route 9's request-duration series after a request to it", async () => {
    const metricsPort = await freePort()
    const service = await processes.start({ METRICS_PORT: String(metricsPort) })
    prometheus = await startPrometheus(metricsPort)
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
    const target = await until('the target to be up', running, async () => {
      const data = await query<Targets>(running, '/api/v1/targets')
      return data?.activeTargets.find((candidate) => candidate.health === 'up')
    })
    expect(target.scrapeUrl).toBe(`http://127.0.0.1:${metricsPort}/metrics`)

    const selector = encodeURIComponent(`http_request_duration_seconds_count{route="${ROUTE_9}",method="GET",status_class="2xx"}`)
    type Vector = { result: { metric: Record<string, string>; value: [number, string] }[] }
    const series = await until('the route 9 series', running, async () => {
      const data = await query<Vector>(running, `/api/v1/query?query=${selector}`)
      return data?.result[0]
    })
    expect(series.metric).toMatchObject({ job: 'receivables-api', route: ROUTE_9, status_class: '2xx' })
    expect(Number(series.value[1])).toBeGreaterThanOrEqual(1)

    // The alert rules load and evaluate: route 9's error ratio is recorded, not absent (its 5xx
    // series exists from its first request; NaN while no request came between two scrapes), and
    // no rule fails.
    const errors = encodeURIComponent(`route:slo_errors:ratio_rate5m{route="${ROUTE_9}",method="GET"}`)
    const ratio = await until(
      'the recorded error ratio',
      running,
      async () => (await query<Vector>(running, `/api/v1/query?query=${errors}`))?.result[0],
    )
    expect(['0', 'NaN']).toContain(ratio.value[1])
    type Rules = { groups: { rules: { name: string; health: string; lastError?: string }[] }[] }
    const rules = (await query<Rules>(running, '/api/v1/rules'))?.groups.flatMap((group) => group.rules) ?? []
    expect(rules.length).toBeGreaterThanOrEqual(20)
    expect(rules.filter((rule) => rule.health === 'err')).toEqual([])

    // The process and event-loop collectors are scraped too.
    const lag = await until(
      'event-loop lag',
      running,
      async () => (await query<Vector>(running, '/api/v1/query?query=nodejs_eventloop_lag_seconds'))?.result[0],
    )
    expect(Number(lag.value[1])).toBeGreaterThanOrEqual(0)
    // The pool's, on PostgreSQL (the embedded database has no pool).
    if (process.env.TEST_DATABASE_URL) {
      const total = await until(
        'the pool gauge',
        running,
        async () => (await query<Vector>(running, '/api/v1/query?query=db_pool_connections%7Bstate%3D%22total%22%7D'))?.result[0],
      )
      expect(Number(total.value[1])).toBeGreaterThanOrEqual(1)
    }
  }, 240_000)
})
