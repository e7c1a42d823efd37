import http from 'node:http'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DEMO_PASSWORD } from '../helpers/app.js'
import { freePort } from '../helpers/ports.js'
import {
  instant,
  prometheusAvailable,
  RULES,
  startPrometheus,
  writeAcceleratedRules,
  type ActiveAlert,
  type PrometheusRun,
} from '../helpers/prometheus.js'
import { useServerProcesses, type ServerProcess } from '../helpers/server-process.js'

// Issue 34: the alert rules of deploy/prometheus/alerts.yml on a new Prometheus scraping a new
// service process, under ordinary traffic (nothing may fire), then under a password-guessing flood
// (only LoginThrottleStorm may fire). The rules run on a clock 120 times faster (a copy made from the
// real file by acceleratedRules: 1 h is 30 s, `for: 5m` 2.5 s), so that the 1 h / 5 m burn-rate pair
// is armed (its history guard met) before the flood starts; the 6 h and 3 d windows never are here.

const available = prometheusAvailable()
if (!available) console.warn('skipping the alert-firing test: no `prometheus` binary on PATH (apt-get install -y prometheus)')

const ACCELERATION = 120
const LOGIN_ROUTE = '/api/auth/v1/token'
const RUNBOOK_BASE = 'https://runbooks.example/docs/runbook.md'
/** The ordinary clients and the guesser, told apart by the service by their socket's address. */
const USERS_ADDRESS = '127.0.0.2'
const GUESSER_ADDRESS = '127.0.0.66'
const USERS = ['alice@acme.example', 'bob@beta.example', 'carol@gamma.example', 'dave@delta.example']
/**
 * Warnings about the machine's own saturation (event loop, hashing threads, pool), sustained for
 * 5 to 10 minutes in alerts.yml: on this clock a few seconds of a loaded CI machine, which they then
 * report truly. Printed, not asserted; every other alert is.
 */
const MACHINE_ALERTS = new Set(['EventLoopLag', 'PasswordHashQueueWaiting', 'DatabasePoolSaturated'])
/** Not about traffic either: the test's database was never backed up, which BackupTooOld reports truly (alerts-backup.test.yml tests it). */
const NOT_TRAFFIC_ALERTS = new Set([...MACHINE_ALERTS, 'BackupTooOld'])

const processes = useServerProcesses()

interface Answer {
  status: number
  body: string
  ms: number
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

function send(
  service: ServerProcess,
  from: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${service.baseUrl}${url}`,
      { method, agent, localAddress: from, headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...headers } },
      (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += String(chunk)))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text, ms: performance.now() - started }))
        response.on('error', reject)
      },
    )
    request.on('error', reject)
    request.end(payload)
  })
}

const where = (alert: ActiveAlert) => (alert.labels.route ? ` (${alert.labels.method} ${alert.labels.route})` : '')

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(!available)('the alert rules on a real Prometheus, ordinary traffic then a guessing flood (issue 34)', () => {
  let prometheus: PrometheusRun | undefined
  let dir: string | undefined
  afterEach(async () => {
    await prometheus?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
    prometheus = undefined
    agent.destroy()
  })

  it('fires nothing on ordinary traffic, and only LoginThrottleStorm on a flood of guesses', async () => {
    const metricsPort = await freePort()
    dir = await mkdtemp(path.join(tmpdir(), 'receivables-alert-firing-'))
    const service = await processes.start({
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'warn',
      LOGIN_FAILURES_PER_CLIENT: '2',
      LOGIN_FAILURES_PER_ADDRESS: '100000',
      // Refused guesses slower than the password routes' 1 s threshold: 401s held 1.2 s. Were they
      // counted, the latency objective of the login route would burn (the figure checked below).
      LOGIN_FAILURE_MIN_MS: '1200',
    })
    // Once the service listens: a target down for a second is ApiInstanceDown on this clock.
    const ruleFile = await writeAcceleratedRules(dir, ACCELERATION)
    const running = await startPrometheus({ targets: [`127.0.0.1:${metricsPort}`], ruleFile, externalLabels: { runbook_base: RUNBOOK_BASE } })
    prometheus = running
    const alertNames = [...(await readFile(RULES, 'utf8')).matchAll(/^\s*- alert: (\w+)$/gm)].map((match) => match[1]!)
    const trafficAlerts = new Set(alertNames.filter((name) => !NOT_TRAFFIC_ALERTS.has(name)))
    const started = Date.now()
    const at = () => ((Date.now() - started) / 1000).toFixed(1)

    // What fired or was pending, and when (seconds since the start), polled every 500 ms.
    const seen = new Map<string, { pending?: string; firing?: string; alert: ActiveAlert }>()
    let phase = 'ordinary'
    const firingIn = { ordinary: new Set<string>(), flood: new Set<string>() }
    const firing = (during: keyof typeof firingIn) => new Set([...firingIn[during]].filter((name) => trafficAlerts.has(name)))
    let polling = true
    const poller = (async () => {
      while (polling) {
        const alerts = (await running.query<{ alerts: ActiveAlert[] }>('/api/v1/alerts'))?.alerts ?? []
        for (const alert of alerts) {
          const name = alert.labels.alertname!
          const entry = seen.get(name) ?? { alert }
          entry.alert = alert
          if (alert.state === 'pending') entry.pending ??= `${at()} s (${phase})`
          if (alert.state === 'firing') {
            entry.firing ??= `${at()} s (${phase})`
            firingIn[phase as keyof typeof firingIn].add(name)
          }
          seen.set(name, entry)
        }
        await sleep(500)
      }
    })()

    // Ordinary traffic all along: the demo users log in in turn, one reads its companies.
    const ordinary = { logins: 0, reads: 0, unexpected: [] as string[] }
    let traffic = true
    const login = await send(service, USERS_ADDRESS, 'POST', LOGIN_ROUTE, { email: USERS[0], password: DEMO_PASSWORD })
    expect(login.status).toBe(200)
    const { access } = JSON.parse(login.body) as { access: string }
    const loginLoop = (async () => {
      for (let n = 0; traffic; n++) {
        const answer = await send(service, USERS_ADDRESS, 'POST', LOGIN_ROUTE, { email: USERS[n % USERS.length], password: DEMO_PASSWORD })
        ordinary.logins++
        if (answer.status !== 200) ordinary.unexpected.push(`login ${answer.status} ${answer.body.slice(0, 200)}`)
        await sleep(800)
      }
    })()
    const readLoop = (async () => {
      while (traffic) {
        const answer = await send(service, USERS_ADDRESS, 'GET', '/api/company/v1/get-user-companies', undefined, {
          authorization: `Bearer ${access}`,
        })
        ordinary.reads++
        if (answer.status !== 200) ordinary.unexpected.push(`read ${answer.status} ${answer.body.slice(0, 200)}`)
        await sleep(150)
      }
    })()

    try {
      // The 1 h pair armed on the login route: a series as old as the (accelerated) hour, and traffic
      // above the floor in both windows. Until then no burn-rate alert can fire, whatever the traffic.
      const armed = await running.until(
        'the login route armed for the 1 h burn-rate pair',
        async () => {
          const result = await instant(
            running,
            `route:slo_history:offset1h{route="${LOGIN_ROUTE}"} and route:slo_requests:rate1h > 0.1 and route:slo_requests:rate5m > 0.1`,
          )
          return result.length > 0 ? at() : undefined
        },
        60_000,
      )
      // A few seconds of ordinary traffic with the alerts armed.
      await sleep(4_000)

      phase = 'flood'
      const floodStarted = Date.now()
      const flood = { statuses: new Map<number, number>(), slowest: 0, fastest: Infinity }
      // Two guessers, each sending five guesses at once at a new e-mail: two get their 401 (held
      // LOGIN_FAILURE_MIN_MS), the three others wait for their hashes and get 429. Few enough hashes
      // a second that the users' logins stay within their objective on a loaded 2-core machine.
      let guessing = true
      let guess = 0
      const guesser = async () => {
        while (guessing) {
          const email = `guess-${guess++}@flood.example`
          const answers = await Promise.all(
            Array.from({ length: 5 }, () => send(service, GUESSER_ADDRESS, 'POST', LOGIN_ROUTE, { email, password: 'Guess#2026!' })),
          )
          for (const answer of answers) {
            flood.statuses.set(answer.status, (flood.statuses.get(answer.status) ?? 0) + 1)
            flood.slowest = Math.max(flood.slowest, answer.ms)
            flood.fastest = Math.min(flood.fastest, answer.ms)
          }
        }
      }
      const guessers = [guesser(), guesser()]
      // What the login route's latency objective would read had it counted the 4xx (over the
      // accelerated hour), at its highest during the flood.
      let counted4xx = 0
      const withRefusals =
        `1 - sum(rate(http_request_duration_seconds_bucket{route="${LOGIN_ROUTE}",status_class!="5xx",le=~"1(\\\\.0)?"}[30s]))` +
        ` / sum(rate(http_request_duration_seconds_count{route="${LOGIN_ROUTE}",status_class!="5xx"}[30s]))`
      try {
        while (Date.now() - floodStarted < 40_000) {
          const value = Number((await instant(running, withRefusals))[0]?.value[1] ?? 0)
          counted4xx = Math.max(counted4xx, value)
          if (seen.get('LoginThrottleStorm')?.firing && Date.now() - floodStarted > 12_000) break
          await sleep(500)
        }
        // Long enough for a latency alert to have fired: its pair's 2.5 s window and `for:` of 1 s.
        await sleep(3_000)
      } finally {
        guessing = false
        await Promise.all(guessers)
      }
      const floodSeconds = (Date.now() - floodStarted) / 1000

      process.stderr.write(
        `alert-firing: armed at ${armed} s; ordinary traffic ${ordinary.logins} logins, ${ordinary.reads} reads; ` +
          `flood from ${((floodStarted - started) / 1000).toFixed(1)} s for ${floodSeconds.toFixed(1)} s: ` +
          `${[...flood.statuses].map(([status, count]) => `${count}×${status}`).join(', ')} (${Math.round(flood.fastest)}–${Math.round(flood.slowest)} ms); ` +
          `login slow share with 4xx counted up to ${(counted4xx * 100).toFixed(0)} %; ` +
          `seen: ${[...seen].map(([name, entry]) => `${name}${where(entry.alert)} pending ${entry.pending ?? '-'}, firing ${entry.firing ?? '-'}`).join('; ') || 'none'}\n`,
      )

      expect(ordinary.unexpected).toEqual([])
      expect(trafficAlerts.has('ApiLatencyBudgetBurn') && trafficAlerts.has('LoginThrottleStorm')).toBe(true)
      expect(firing('ordinary'), 'fired under ordinary traffic').toEqual(new Set())
      expect(firing('flood'), 'fired under the flood').toEqual(new Set(['LoginThrottleStorm']))
      const storm = seen.get('LoginThrottleStorm')!.alert
      expect(storm.annotations.runbook_url).toBe(`${RUNBOOK_BASE}#loginthrottlestorm`)
      // The flood was one that the old objective would have paged on: most refusals over 1 s.
      expect(flood.statuses.get(401)).toBeGreaterThan(0)
      expect(flood.statuses.get(429)).toBeGreaterThan(0)
      expect(counted4xx).toBeGreaterThan(0.144)
    } finally {
      traffic = false
      await Promise.all([loginLoop, readLoop])
      polling = false
      await poller
    }
  })
})
