import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEMO_PASSWORD } from '../../db/seed/demo.js'
import { DEMO } from '../../db/seed/ids.js'
import { prometheusAvailable, RULES, startPrometheus, type PrometheusRun } from '../helpers/prometheus.js'
import { BLOCKLIST } from '../topology/nginx.js'
import { request, startTopology, topologyUnavailable, type Answer, type RequestOptions, type Topology } from '../topology/topology.js'
import { runProcess, type ProcessRun } from '../helpers/run-process.js'
import { scaled } from '../helpers/slowness.js'

// Issue 34: every step of docs/runbook.md is a command that works as written. Its blocks marked
// `sh runnable` run here, in the runbook's order, against a fleet (nginx with deploy/nginx.conf over
// TLS, two instances on PgBouncer and PostgreSQL, Prometheus evaluating alerts.yml), after traffic
// that leaves in the logs what the alerts' entries look for: a guessing flood from one address that
// also got into an account, and a refresh token replayed. The runbook's site functions (promql, logs,
// api, sql, pooler, cli, gateway) are its own where they need no Docker (promql), and defined for these
// processes otherwise; the words in angle brackets are filled from what the logs say.

const RUNBOOK = 'docs/runbook.md'
const GUESSER = '127.0.0.66'
const USER_ADDRESS = '127.0.0.9'
const TOOLS = ['psql', 'jq', 'curl']

const missingTools = TOOLS.filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
const unavailable =
  topologyUnavailable()?.replace('topology tests', 'the runbook test') ??
  (!prometheusAvailable() ? 'runbook test skipped: needs prometheus (apt-get install prometheus)' : undefined) ??
  (missingTools.length > 0 ? `runbook test skipped: needs ${missingTools.join(', ')}` : undefined)
if (unavailable) process.stderr.write(`${unavailable}\n`)

interface Block {
  section: string
  info: string
  code: string
}

/** The fenced blocks of a Markdown text, each with the heading (## or ###) it is under. */
function fencedBlocks(markdown: string): Block[] {
  const blocks: Block[] = []
  let section = ''
  const lines = markdown.split('\n')
  for (let index = 0; index < lines.length; index++) {
    const heading = /^#{2,3} (.+)$/.exec(lines[index]!)
    if (heading) section = heading[1]!.trim()
    const fence = /^```(.*)$/.exec(lines[index]!)
    if (!fence) continue
    const code: string[] = []
    while (++index < lines.length && lines[index] !== '```') code.push(lines[index]!)
    blocks.push({ section, info: fence[1]!.trim(), code: code.join('\n') })
  }
  return blocks
}

/** The site functions for this fleet, after the runbook's own definitions (which name Docker's). */
function siteFunctions(fleet: { apiPorts: number[]; poolerUrl: string; databaseUrl: string; nginx: Topology['gateway'] }): string {
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`
  const nginx = [fleet.nginx.binary, ...fleet.nginx.args].map(quote).join(' ')
  return `
logs() { cat "$RUNBOOK_LOGS"; }
api() {
  local port
  case "$1" in api-1) port=${fleet.apiPorts[0]} ;; api-2) port=${fleet.apiPorts[1]} ;; *) echo "api: no instance $1" >&2; return 2 ;; esac
  "$NODE" -e 'fetch(process.argv[1] + process.argv[2]).then(async (r) => console.log(r.status, await r.text()))' "http://127.0.0.1:$port" "$2"
}
sql() { psql ${quote(fleet.databaseUrl)} -v ON_ERROR_STOP=1 "$@"; }
pooler() { psql ${quote(fleet.poolerUrl)} "$@"; }
cli() { "$NODE" --import tsx "src/cli/$1.ts" "\${@:2}"; }
gateway() { [ "$1" = nginx ] || { echo "gateway: only nginx here" >&2; return 2; }; shift; ${nginx} "$@"; }
`
}

function bash(script: string, env: Record<string, string>): Promise<ProcessRun> {
  return runProcess('bash', ['-c', script], { ...process.env, ...env }, 120_000)
}

describe('docs/runbook.md (issue 34)', () => {
  it('gives every alert a step of commands to run, and its setup block is valid shell', async () => {
    const markdown = await readFile(RUNBOOK, 'utf8')
    const blocks = fencedBlocks(markdown)
    const alerts = [...(await readFile(RULES, 'utf8')).matchAll(/^\s*- alert: (\w+)$/gm)].map((match) => match[1]!)
    expect(alerts.length).toBeGreaterThanOrEqual(13)
    for (const alert of alerts) {
      expect(
        blocks.filter((block) => block.section === alert && block.info === 'sh runnable'),
        `${alert} has a runnable block`,
      ).not.toEqual([])
    }
    const setup = blocks.filter((block) => block.section === 'Where the commands run' && block.info === 'sh')
    expect(setup).toHaveLength(1)
    const check = spawnSync('bash', ['-n'], { input: setup[0]!.code, encoding: 'utf8' })
    expect(check.stderr).toBe('')
    const defined = [...setup[0]!.code.matchAll(/^(\w+)\(\) \{/gm)].map((match) => match[1]).sort()
    expect(defined).toEqual(['api', 'cli', 'gateway', 'logs', 'pooler', 'promql', 'sql'])
  })
})

describe.skipIf(unavailable !== undefined)('docs/runbook.md, run against a fleet (issue 34)', () => {
  let topology: Topology
  let prometheus: PrometheusRun
  let dir: string

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'receivables-runbook-'))
    topology = await startTopology(
      // Login counters in each instance's memory: no Redis keys shared with the other fleets' tests.
      { LOG_LEVEL: 'info', TRUST_PROXY: '127.0.0.1', LOGIN_FAILURES_PER_CLIENT: '3', DRAIN_DELAY: '3s' },
      true,
      { name: 'runbook', metrics: true },
    )
    prometheus = await startPrometheus({
      targets: topology.metricsPorts.map((port) => `127.0.0.1:${port}`),
      externalLabels: { runbook_base: 'https://runbooks.example/docs/runbook.md' },
    })
  })

  afterAll(async () => {
    await prometheus?.stop()
    await topology?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('runs every runnable block as written, and its recipes take effect', { timeout: scaled(300_000) }, async () => {
    const gateway = topology.gateway
    const viaGateway = (options: RequestOptions) => request(gateway.port, { ...options, ca: gateway.ca })
    const login = (email: string, password: string, from: string) =>
      viaGateway({ method: 'POST', path: '/api/auth/v1/token', body: { email, password }, from })
    const json = (answer: Answer) => JSON.parse(answer.body) as Record<string, string>
    /** The gateway's answer to `from`, polled for up to 5 s until it is `status`. */
    const answerBecomes = async (from: string, status: number): Promise<Answer> => {
      for (let waited = 0; ; waited += 100) {
        const answer = await viaGateway({ path: '/health/live', from })
        if (answer.status === status || waited >= 5_000) return answer
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }

    // What the entries look for. A guessing address hammers carol's account until refused, and gets
    // into erin's; bob's spent refresh token comes back after its successor was used.
    const statuses: number[] = []
    for (let attempt = 0; attempt < 8; attempt++) statuses.push((await login('carol@gamma.example', 'Guess#2026!', GUESSER)).status)
    expect(statuses).toContain(429)
    expect((await login('erin@acme.example', DEMO_PASSWORD, GUESSER)).status).toBe(200)
    const bob = json(await login('bob@beta.example', DEMO_PASSWORD, USER_ADDRESS))
    const refresh = (token: string) =>
      viaGateway({ method: 'POST', path: '/api/auth/v1/token/refresh', body: { refresh: token }, from: USER_ADDRESS })
    const successor = json(await refresh(bob.refresh!)).refresh!
    expect((await refresh(successor)).status).toBe(200)
    expect((await refresh(bob.refresh!)).status).toBe(401)
    // Prometheus has scraped both instances.
    await prometheus.until('both targets up', async () => {
      const data = await prometheus.query<{ activeTargets: { health: string }[] }>('/api/v1/targets')
      return data?.activeTargets.filter((target) => target.health === 'up').length === 2 ? true : undefined
    })

    const logFile = path.join(dir, 'instances.log')
    await writeFile(logFile, `${topology.instances.flatMap((instance) => instance.output).join('\n')}\n`)
    const events = topology.instances
      .flatMap((instance) => instance.output)
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown>]
        } catch {
          return []
        }
      })
    const requestId = events.find((line) => typeof line.request_id === 'string')?.request_id as string
    const carolDigest = createHash('sha256').update('carol@gamma.example').digest('hex').slice(0, 16)
    expect(events.some((line) => line.event === 'login_throttled' && line.email_digest === carolDigest && line.client_address === GUESSER)).toBe(true)

    const serverUrl = new URL(process.env.TEST_DATABASE_URL!)
    const databaseUrl = new URL(serverUrl)
    databaseUrl.pathname = `/${topology.database}`
    // The words of the entries, as the logs and the demo data give them; some entries name their own.
    const words: Record<string, string> = {
      client_address: GUESSER,
      email_digest: carolDigest,
      user_id: DEMO.users.erin,
      request_id: requestId,
      pid: '0',
      role: decodeURIComponent(serverUrl.username || 'postgres'),
      database: topology.database,
      reason: 'LoginThrottleStorm',
    }
    const wordsOf: Record<string, Record<string, string>> = { RefreshTokenReplays: { user_id: DEMO.users.bob } }

    const markdown = await readFile(RUNBOOK, 'utf8')
    const blocks = fencedBlocks(markdown)
    const setup = blocks.find((block) => block.section === 'Where the commands run')!.code
    const prelude = [
      'set -eo pipefail',
      setup,
      // The setup's addresses are compose's: this fleet's instead.
      `export PROMETHEUS=${prometheus.url} BLOCKLIST='${gateway.blocklist}'`,
      siteFunctions({
        apiPorts: topology.ports,
        poolerUrl: topology.bouncer.url('pgbouncer'),
        databaseUrl: databaseUrl.toString(),
        nginx: gateway,
      }),
    ].join('\n')
    const env = {
      RUNBOOK_LOGS: logFile,
      NODE: process.execPath,
      // The instances' database settings, as cli's commands read them in an instance's container.
      DATABASE_URL: topology.bouncer.url(topology.database),
      PGCONNECT_TIMEOUT: '5',
    }

    const repositoryBlocklist = await readFile(BLOCKLIST, 'utf8')
    const failures: string[] = []
    const ran: string[] = []
    const started = Date.now()
    for (const block of blocks.filter((candidate) => candidate.info === 'sh runnable')) {
      const filled = block.code.replace(/<([a-z_]+)>/g, (whole, word: string) => wordsOf[block.section]?.[word] ?? words[word] ?? whole)
      const unfilled = filled.match(/<[a-z_ ]+>/g)
      if (unfilled) {
        failures.push(`${block.section}: no value for ${unfilled.join(', ')}`)
        continue
      }
      const run = await bash(`${prelude}\n${filled}`, env)
      // RUNBOOK_VERBOSE=1: every block's output, to read what an operator would see.
      if (process.env.RUNBOOK_VERBOSE) process.stderr.write(`--- ${block.section}\n${filled}\n${run.stdout}${run.stderr}\n`)
      ran.push(`${block.section}: ${filled.split('\n').filter((line) => line.trim() && !line.startsWith('#')).length} commands`)
      const complaint = /jq: error|ERROR:|command not found|No such file|\[emerg\]/.exec(run.stderr)
      if (run.code !== 0 || complaint) {
        failures.push(
          `${block.section} (exit ${run.code}):\n${filled}\n--- stdout\n${run.stdout.slice(-1500)}\n--- stderr\n${run.stderr.slice(-1500)}`,
        )
        continue
      }
      // The recipes' effects, checked where they ran (the reload's new workers take a moment).
      if (filled.includes('>> "$BLOCKLIST"')) {
        const refused = await answerBecomes(GUESSER, 403)
        if (refused.status !== 403 || json(refused).code !== 'address_blocked')
          failures.push(`${block.section}: the blocked address got ${refused.status}`)
        const other = await viaGateway({ path: '/health/live', from: USER_ADDRESS })
        if (other.status !== 200) failures.push(`${block.section}: another address got ${other.status}`)
      }
      if (/^sed -i .*"\$BLOCKLIST"$/m.test(filled)) {
        const lifted = await answerBecomes(GUESSER, 200)
        if (lifted.status !== 200) failures.push(`${block.section}: the lifted address got ${lifted.status}`)
      }
      if (block.section === 'LoginThrottleStorm' && filled.includes('cli disable-user')) {
        for (const user of [DEMO.users.erin, DEMO.users.carol])
          if (!run.stdout.includes(`"user_id":"${user}"`)) failures.push(`${block.section}: ${user} not disabled:\n${run.stdout}`)
      }
    }
    process.stderr.write(`runbook: ${ran.length} runnable blocks in ${((Date.now() - started) / 1000).toFixed(1)} s (${ran.join('; ')})\n`)
    expect(failures).toEqual([])
    // The recipes wrote this fleet's copy of the deny list, never the repository's.
    expect(await readFile(BLOCKLIST, 'utf8')).toBe(repositoryBlocklist)

    // The users the entries disabled can no longer log in (from an address nobody throttled).
    for (const email of ['erin@acme.example', 'carol@gamma.example', 'bob@beta.example']) {
      const answer = await login(email, DEMO_PASSWORD, '127.0.0.11')
      expect(answer.status, email).toBe(401)
      expect(json(answer).code).toBe('no_active_account')
    }
  })
})
