import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ServiceMetrics } from '../../src/observability/metrics.js'
import { DEMO_PASSWORD } from '../helpers/app.js'
import { freePort } from '../helpers/ports.js'
import { useServerProcesses } from '../helpers/server-process.js'

// Issue 29: the alert rules (deploy/prometheus/alerts.yml) and the Grafana dashboard
// (deploy/grafana/dashboard.json) must name only metrics and label values the service exports, as
// a real scrape shows them, and every alert must have its runbook entry (docs/runbook.md).

const RULES = 'deploy/prometheus/alerts.yml'
const DASHBOARD = 'deploy/grafana/dashboard.json'
const RUNBOOK = 'docs/runbook.md'
const PROMETHEUS_CONFIG = 'deploy/prometheus/prometheus.yml'

/** Made by Prometheus itself for each target, not exported by the service. */
const PROMETHEUS_SERIES = new Set(['up'])
/** Added by Prometheus to every scraped series, so absent from the exposition. */
const TARGET_LABELS = new Set(['job', 'instance'])
const PROMQL_KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
])

interface Rule {
  alert?: string
  record?: string
  expr: string
  runbookUrl?: string
}

/** The rules of a rule file as this repository writes them (`expr:` inline or as a `|` block). */
function parseRules(text: string): Rule[] {
  const rules: Rule[] = []
  const lines = text.split('\n')
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!
    const head = /^\s*- (alert|record): (\S+)\s*$/.exec(line)
    if (head) {
      rules.push(head[1] === 'alert' ? { alert: head[2]!, expr: '' } : { record: head[2]!, expr: '' })
      continue
    }
    const rule = rules.at(-1)
    if (!rule) continue
    const expr = /^(\s*)expr: (.*)$/.exec(line)
    if (expr && expr[2]!.trim() === '|') {
      const indent = expr[1]!.length
      const block: string[] = []
      while (index + 1 < lines.length && (lines[index + 1]!.trim() === '' || lines[index + 1]!.search(/\S/) > indent)) block.push(lines[++index]!)
      rule.expr = block.join('\n').trim()
    } else if (expr) {
      rule.expr = expr[2]!.trim()
    }
    const runbook = /^\s*runbook_url: '?([^']+?)'?\s*$/.exec(line)
    if (runbook) rule.runbookUrl = runbook[1]!
  }
  return rules
}

/** The metric names a PromQL expression (or Grafana's `label_values(metric, label)`) reads. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/label_values\(([^,()]*),\s*\w+\s*\)/g, '$1')
    .replace(/\$\w+/g, '')
  const names = new Set<string>()
  for (const match of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const before = bare[match.index - 1] ?? ''
    const after = bare.slice(match.index + match[0].length).trimStart()
    if (/[0-9.]/.test(before) || after.startsWith('(') || PROMQL_KEYWORDS.has(match[0].toLowerCase())) continue
    names.add(match[0])
  }
  return [...names]
}

/** `label="value"` equality matchers of each selector, without the target's labels or Grafana variables. */
function equalityMatchers(expr: string): { metric: string; label: string; value: string }[] {
  const found: { metric: string; label: string; value: string }[] = []
  for (const selector of expr.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}/g)) {
    for (const matcher of selector[2]!.matchAll(/(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)) {
      const [, label, operator, value] = matcher
      if (operator !== '=' || TARGET_LABELS.has(label!) || value!.includes('$')) continue
      found.push({ metric: selector[1]!, label: label!, value: value! })
    }
  }
  return found
}

type Exposition = Map<string, Record<string, string>[]>

/** Each series name of a Prometheus text exposition with the label sets it appears with. */
function parseExposition(text: string, into: Exposition = new Map()): Exposition {
  for (const line of text.split('\n')) {
    const sample = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? /.exec(line)
    if (!sample) continue
    const labels = Object.fromEntries([...(sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((match) => [match[1]!, match[2]!]))
    const series = into.get(sample[1]!) ?? []
    series.push(labels)
    into.set(sample[1]!, series)
  }
  return into
}

/** What an expression names that the exposition (or the rules' own recorded series) lacks. */
function missingFrom(exposition: Exposition, recorded: Set<string>, expr: string): string[] {
  const known = (name: string) => exposition.has(name) || recorded.has(name) || PROMETHEUS_SERIES.has(name)
  const missing = metricNames(expr).filter((name) => !known(name))
  for (const { metric, label, value } of equalityMatchers(expr)) {
    if (recorded.has(metric) || PROMETHEUS_SERIES.has(metric) || !exposition.has(metric)) continue
    if (!exposition.get(metric)!.some((labels) => labels[label] === value)) missing.push(`${metric}{${label}="${value}"}`)
  }
  return missing
}

interface Panel {
  title?: string
  targets?: { expr?: string }[]
  panels?: Panel[]
}

/** Every PromQL expression of the dashboard: panels' targets and the template variables' queries. */
function dashboardExpressions(dashboard: { panels: Panel[]; templating: { list: { type: string; query?: unknown }[] } }): string[] {
  const exprs: string[] = []
  const visit = (panel: Panel) => {
    for (const target of panel.targets ?? []) if (target.expr) exprs.push(target.expr)
    for (const inner of panel.panels ?? []) visit(inner)
  }
  for (const panel of dashboard.panels) visit(panel)
  for (const variable of dashboard.templating.list) {
    if (variable.type !== 'query') continue
    const query = variable.query as string | { query: string }
    exprs.push(typeof query === 'string' ? query : query.query)
  }
  return exprs
}

const processes = useServerProcesses()

/** Debian's prometheus package (.ci/run installs it) ships promtool. */
const PROMTOOL = 'promtool'
const promtool = spawnSync(PROMTOOL, ['--version']).status === 0
if (!promtool) console.warn("skipping the dashboard's PromQL syntax check: no `promtool` on PATH (apt-get install -y prometheus)")

async function post(baseUrl: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
}

/** A real service process, driven so that every series exists, then scraped over HTTP. */
async function scrapeAfterTraffic(): Promise<string> {
  const metricsPort = await freePort()
  const service = await processes.start({ METRICS_PORT: String(metricsPort) })
  const login = await post(service.baseUrl, '/api/auth/v1/token', { email: 'bob@beta.example', password: DEMO_PASSWORD })
  expect(login.status).toBe(200)
  const { access, refresh } = (await login.json()) as { access: string; refresh: string }
  expect((await post(service.baseUrl, '/api/auth/v1/token', { email: 'bob@beta.example', password: 'not the password' })).status).toBe(401)
  const companies = await fetch(`${service.baseUrl}/api/company/v1/get-user-companies`, { headers: { authorization: `Bearer ${access}` } })
  expect(companies.status).toBe(200)
  // A retry within the grace, then a replay last (the successor used first): it revokes the family.
  const rotated = await post(service.baseUrl, '/api/auth/v1/token/refresh', { refresh })
  expect(rotated.status).toBe(200)
  const { refresh: successor } = (await rotated.json()) as { refresh: string }
  expect((await post(service.baseUrl, '/api/auth/v1/token/refresh', { refresh })).status).toBe(200)
  expect((await post(service.baseUrl, '/api/auth/v1/token/refresh', { refresh: successor })).status).toBe(200)
  expect((await post(service.baseUrl, '/api/auth/v1/token/refresh', { refresh })).status).toBe(401)
  const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
  expect(scrape.status).toBe(200)
  return scrape.text()
}

describe('the alert rules and the dashboard against a real scrape (issue 29)', () => {
  it('name only metrics and label values the service exports', async () => {
    const exposition = parseExposition(await scrapeAfterTraffic())
    if (process.env.TEST_DATABASE_URL) {
      expect(exposition.get('db_pool_connections')?.map((labels) => labels.state)).toEqual(['total', 'idle'])
    } else {
      // The embedded database has no pool, so no pool metrics: take their names from the code
      // that exports them on PostgreSQL (the run with TEST_DATABASE_URL scrapes them for real).
      const metrics = new ServiceMetrics()
      metrics.databasePool({ totalCount: 0, idleCount: 0, waitingCount: 0 })
      parseExposition(await metrics.registry.metrics(), exposition)
    }
    // Without DATABASE_REPLICA_URLS the service exports no replica metrics: their names and labels
    // come from the code that exports them (test/topology/replicas.test.ts scrapes them for real).
    const withReplicas = new ServiceMetrics()
    withReplicas.replicaReads([{ name: '10.0.0.12:5432', up: true, lagSeconds: 0 }])
    parseExposition(await withReplicas.registry.metrics(), exposition)
    // The archive's and backups' gauges, as on a PostgreSQL primary (test/topology/restore.test.ts scrapes them for real).
    const withBackups = new ServiceMetrics()
    withBackups.backupStatus(async () => ({ archivedCount: 1, failedCount: 0, lastArchivedAt: 1, lastFailedAt: null, lastBackupAt: 1 }))
    parseExposition(await withBackups.registry.metrics(), exposition)

    const rules = parseRules(await readFile(RULES, 'utf8'))
    const recorded = new Set(rules.flatMap((rule) => (rule.record ? [rule.record] : [])))
    expect(rules.filter((rule) => rule.alert).length).toBeGreaterThanOrEqual(10)
    const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as Parameters<typeof dashboardExpressions>[0]
    const dashboardExprs = dashboardExpressions(dashboard)
    expect(dashboardExprs.length).toBeGreaterThanOrEqual(20)

    const problems: string[] = []
    for (const rule of rules) {
      expect(rule.expr, `${rule.alert ?? rule.record} has an expression`).not.toBe('')
      for (const missing of missingFrom(exposition, recorded, rule.expr)) problems.push(`${RULES} ${rule.alert ?? rule.record}: ${missing}`)
    }
    for (const expr of dashboardExprs)
      for (const missing of missingFrom(exposition, recorded, expr)) problems.push(`${DASHBOARD}: ${missing} in ${expr}`)
    expect(problems).toEqual([])
  })

  it('the check itself finds a misspelt metric, a misspelt label value and a histogram series that does not exist', () => {
    const exposition = parseExposition(
      [
        'http_request_duration_seconds_bucket{le="0.25",method="GET",route="/x",status_class="2xx"} 1',
        'http_request_duration_seconds_count{method="GET",route="/x",status_class="5xx"} 0',
        'login_throttle_decisions_total{decision="throttled"} 0',
        'password_hash_queue_depth 0',
      ].join('\n'),
    )
    const recorded = new Set(['route:slo_errors:ratio_rate5m'])
    const check = (expr: string) => missingFrom(exposition, recorded, expr)
    expect(check('sum by (method, route) (rate(http_request_duration_seconds_count{job="receivables-api",status_class="5xx"}[5m]))')).toEqual([])
    expect(
      check('histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))'),
    ).toEqual([])
    expect(check('route:slo_errors:ratio_rate5m > (14.4 * 0.001) and up{job="receivables-api"} == 0')).toEqual([])
    expect(check('label_values(up{job="receivables-api"}, instance)')).toEqual([])
    expect(check('rate(http_request_duration_second_count[5m]) > 1e3')).toEqual(['http_request_duration_second_count'])
    expect(check('rate(login_throttle_decisions_total{decision="throtled"}[5m])')).toEqual(['login_throttle_decisions_total{decision="throtled"}'])
    expect(check('password_hash_queue_depth_bucket')).toEqual(['password_hash_queue_depth_bucket'])
    expect(check('route:slo_errors:ratio_rate1h')).toEqual(['route:slo_errors:ratio_rate1h'])
  })
})

describe.skipIf(!promtool)("the dashboard's PromQL (issue 29)", () => {
  it('parses: each expression checked by promtool as a recording rule, Grafana variables given values', async () => {
    const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as Parameters<typeof dashboardExpressions>[0]
    const exprs = dashboardExpressions(dashboard).filter((expr) => !expr.startsWith('label_values('))
    const withValues = (expr: string) => expr.replaceAll('$__rate_interval', '5m').replaceAll('$instance', '.*')
    const rules = [
      'groups:',
      '  - name: dashboard',
      '    rules:',
      ...exprs.flatMap((expr, index) => [`      - record: dashboard_${index}`, `        expr: ${JSON.stringify(withValues(expr))}`]),
    ]
    const dir = await mkdtemp(path.join(tmpdir(), 'receivables-dashboard-'))
    try {
      await writeFile(path.join(dir, 'dashboard.rules.yml'), `${rules.join('\n')}\n`)
      const check = spawnSync(PROMTOOL, ['check', 'rules', path.join(dir, 'dashboard.rules.yml')], { encoding: 'utf8' })
      expect(`${check.stdout}${check.stderr}`).toContain(`SUCCESS: ${exprs.length} rules found`)
      expect(check.status).toBe(0)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('the runbook (issues 29, 34)', () => {
  it("has an entry per alert, and each alert points at its entry's absolute address", async () => {
    const rules = parseRules(await readFile(RULES, 'utf8'))
    const runbook = await readFile(RUNBOOK, 'utf8')
    const headings = new Set([...runbook.matchAll(/^### (\S+)\s*$/gm)].map((match) => match[1]!))
    const alerts = rules.flatMap((rule) => (rule.alert ? [rule] : []))
    for (const alert of alerts) {
      expect(headings, `${RUNBOOK} has a "### ${alert.alert}" entry`).toContain(alert.alert)
      // Absolute once Prometheus expands it (the external label runbook_base, prometheus.yml).
      expect(alert.runbookUrl, `${alert.alert}'s runbook_url`).toBe(`{{ $externalLabels.runbook_base }}#${alert.alert!.toLowerCase()}`)
    }
    const base = /^\s+runbook_base: (\S+)$/m.exec(await readFile(PROMETHEUS_CONFIG, 'utf8'))?.[1]
    expect(base, `${PROMETHEUS_CONFIG} sets the external label runbook_base`).toBeDefined()
    expect(new URL(base!).protocol).toBe('https:')
    expect(base).toMatch(new RegExp(`/${RUNBOOK}$`))
    for (const entry of ['Symptom', 'Likely cause', 'Look at', 'Do']) {
      expect(runbook.match(new RegExp(`^\\*\\*${entry}\\.\\*\\*`, 'gm'))?.length, `every entry has its "${entry}."`).toBe(alerts.length)
    }
  })
})
