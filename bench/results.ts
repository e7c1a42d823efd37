/**
 * `npm run bench:results`: regenerates every table of bench/RESULTS.md at the checkout's HEAD, on
 * the Node running it, one tool after another: `npm run bench` (targets, floors, routes, mixed,
 * soak, logging, start-up), the production volume (bench/volume-run.ts), the reads against their
 * own SQL, the keyed writes and the forged tokens (bench:compare), PgBouncer (bench/pooler.ts), reads on a
 * streaming replica (bench/replicas.ts) and the nested JSON body (bench/nested-json.ts). Each table says its command, commit, date and
 * machine. Current figures only: a before/after study goes in the commit that made the change.
 * `--quick` runs every step for a few seconds, to check the command, not to read its figures.
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import type { ComparedRuns } from './compare.js'
import { median } from './report.js'
import { REPO_ROOT } from './servers.js'

const HELP = `npm run bench:results -- [options]     (builds first: prebench:results)
  --quick              every step for a few seconds: proves the command, figures not to be read
  --only a,b           steps to run (bench volume reads writes tokens pooler replicas mixed nested fairness login-fairness; default all); the
                       others' sections are kept from the existing file
  --base-url URL       PostgreSQL server for the bench databases (default postgres://postgres@127.0.0.1:5432)
  --prefix NAME        prefix of the bench databases, dropped and re-created (default bench)
  --volume-scale F     production volume factor (default 1; --quick 0.001); an existing volume database of
                       the same factor is reused (generating factor 1 takes long)
  --out FILE           default bench/RESULTS.md`

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string', default: '' },
    'base-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432' },
    prefix: { type: 'string', default: 'bench' },
    'volume-scale': { type: 'string' },
    out: { type: 'string', default: 'bench/RESULTS.md' },
    help: { type: 'boolean', default: false },
  },
})
if (values.help) {
  process.stdout.write(`${HELP}\n`)
  process.exit(0)
}
const quick = values.quick
const out = resolve(REPO_ROOT, values.out)
const url = (name: string) => `${values['base-url']}/${values.prefix}${name}`
const volumeScale = values['volume-scale'] ?? (quick ? '0.001' : '1')
const work = mkdtempSync(join(tmpdir(), 'bench-results-'))
const say = (text: string): void => void process.stdout.write(`${text}\n`)
const git = (args: string[]) => execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim()

/** A tool of bench/ through tsx; its output shown as it runs and returned. */
function tool(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  say(`\n$ npx tsx ${script} ${args.join(' ')}`)
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env } })
    let text = ''
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString()
      process.stdout.write(chunk)
    })
    child.stderr.pipe(process.stderr)
    child.once('exit', (code) => (code === 0 ? done(text) : fail(new Error(`${script} exited with ${code}`))))
  })
}

const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

async function postgresVersion(): Promise<string> {
  const client = new pg.Client({ connectionString: `${values['base-url']}/postgres` })
  await client.connect()
  try {
    return (await client.query<{ v: string }>("SELECT split_part(version(), ',', 1) AS v")).rows[0]!.v
  } finally {
    await client.end()
  }
}

async function databaseExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: `${values['base-url']}/postgres` })
  await client.connect()
  try {
    return (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1
  } finally {
    await client.end()
  }
}

/** The line every table opens with: what ran, where, when, on which commit. */
async function provenance(command: string, loadBefore: string): Promise<string> {
  // RESULTS.md itself is rewritten by the run.
  const dirty = git(['status', '--porcelain', '--untracked-files=no'])
    .split('\n')
    .filter((line) => line && !line.endsWith(' bench/RESULTS.md')).length
  const cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown CPU'
  return [
    `- Command: \`${command}\`${quick ? ' (**--quick: a check of the command; these figures mean nothing**)' : ''}`,
    `- ${new Date().toISOString()}, commit ${git(['rev-parse', '--short', 'HEAD'])}${dirty ? ` with uncommitted changes (${dirty} files)` : ''}; ` +
      `${availableParallelism()} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.version}, ${await postgresVersion()}; load average ${loadBefore} before, ${loadAverage()} after`,
  ].join('\n')
}

const range = (numbers: number[], digits = 0) =>
  `${median(numbers).toFixed(digits)} (${Math.min(...numbers).toFixed(digits)}–${Math.max(...numbers).toFixed(digits)})`

async function compare(name: string, args: string[]): Promise<{ runs: ComparedRuns[]; command: string; load: string }> {
  const json = join(work, `${name}.json`)
  const load = loadAverage()
  const timing = quick ? ['--rounds', '2', '--duration', '1', '--warmup', '1'] : []
  const all = [...args, ...timing, '--database-url', url('_compare'), '--json', json]
  await tool('bench/compare.ts', all)
  const command = `npm run bench:compare -- ${args.map((arg) => (/\s/.test(arg) ? `'${arg}'` : arg)).join(' ')}`
  return { runs: JSON.parse(readFileSync(json, 'utf8')) as ComparedRuns[], command, load }
}

interface Section {
  id: string
  title: string
  make: () => Promise<string>
}

const SECTIONS: Section[] = [
  {
    id: 'reads',
    title: 'Reads against their own SQL: server CPU per request',
    async make() {
      const { runs, command, load } = await compare('reads', [
        '--scenario',
        'r4,r6,r7,r9',
        '--rounds',
        '8',
        '--variant',
        'service:',
        '--variant',
        'own-sql: floor=own-sql',
      ])
      const rows = ['r4', 'r6', 'r7', 'r9'].map((scenario) => {
        const service = runs.find((run) => run.scenario === scenario && !run.ownSqlFloor)!
        const floor = runs.find((run) => run.scenario === scenario && run.ownSqlFloor)!
        // Each round's floor against the service's run of the same round: the machine's drift moves both.
        const ratios = service.cpuMicrosPerRequest.map((micros, round) => floor.cpuMicrosPerRequest[round]! / micros)
        return `| ${scenario} | ${range(service.cpuMicrosPerRequest)} | ${range(floor.cpuMicrosPerRequest)} | ${range(ratios, 2)} | ${median(service.requestsPerSecond).toFixed(0)} / ${median(floor.requestsPerSecond).toFixed(0)} | ${service.failed + floor.failed} |`
      })
      return [
        await provenance(command, load),
        '',
        'Each read route against its own statement in a bare handler (bench/own-sql-floor.ts), interleaved rounds; target ≥ 0.9 (issue 36). Median (range) of the rounds:',
        '',
        '| route | service µs/req | own SQL µs/req | own SQL / service, per round | req/s service / own SQL | failed |',
        '| --- | ---: | ---: | ---: | ---: | ---: |',
        ...rows,
      ].join('\n')
    },
  },
  {
    id: 'writes',
    title: 'Idempotency-Key: routes 5 and 11 without a key, with a new key each, one key replayed',
    async make() {
      const { runs, command, load } = await compare('writes', ['--scenario', 'r11,r11k,r11r,r5,r5k,r5r', '--rounds', '5', '--variant', 'service:'])
      const rows = runs.map(
        (run) =>
          `| ${run.scenario} | ${range(run.cpuMicrosPerRequest)} | ${median(run.requestsPerSecond).toFixed(0)} | ${median(run.p50Ms).toFixed(1)} | ${run.failed} |`,
      )
      return [
        await provenance(command, load),
        '',
        'Route 5 without a key answers `409` after its first request (non-2xx by design, counted as failed).',
        '',
        '| scenario | server µs/req, median (range) | req/s | p50 ms | non-2xx + errors |',
        '| --- | ---: | ---: | ---: | ---: |',
        ...rows,
      ].join('\n')
    },
  },
  {
    id: 'tokens',
    title: 'Forged tokens against the number of keys (route 4, every answer 401)',
    async make() {
      const fallbacks = Array.from({ length: 20 }, (_, i) => `bench-fallback-key-of-sufficient-length-${String(i).padStart(4, '0')}`).join(',')
      const { runs, command, load } = await compare('tokens', [
        '--scenario',
        'x4,x4k',
        '--rounds',
        '8',
        '--variant',
        'none:',
        '--variant',
        `twenty: JWT_SIGNING_KEY_FALLBACKS=${fallbacks}`,
        '--variant',
        `cut-over: JWT_SIGNING_KEY_FALLBACKS=${fallbacks} JWT_KID_CUTOVER=2026-11-01`,
      ])
      const rows = runs.map(
        (run) => `| ${run.variant} | ${run.scenario} | ${range(run.cpuMicrosPerRequest)} | ${median(run.requestsPerSecond).toFixed(0)} |`,
      )
      return [
        (await provenance(command, load)).replaceAll(fallbacks, '<20 keys>'),
        '',
        '`x4`: a token without `kid`, `x4k`: an unknown `kid`; none: no fallback key; twenty: 20 fallback keys within the `kid` window; cut-over: the same after the window.',
        '',
        '| variant | scenario | server µs/req, median (range) | req/s |',
        '| --- | --- | ---: | ---: |',
        ...rows,
      ].join('\n')
    },
  },
  {
    id: 'pooler',
    title: 'Behind PgBouncer: route 9 (`bench/pooler.ts`)',
    async make() {
      const load = loadAverage()
      const args = quick ? ['--rounds', '1', '--duration', '2', '--warmup', '1'] : ['--rounds', '3']
      const text = await tool('bench/pooler.ts', [...args, '--database-url', url('_pooler')])
      const table = text.slice(text.indexOf('Route 9,')).trim()
      return [
        await provenance(`npx tsx bench/pooler.ts ${args.join(' ')}`, load),
        '',
        "PgBouncer from `--pgbouncer` or `PGBOUNCER_BINARY`, else Debian's: the prepared-statement setup needs ≥ 1.21.",
        '',
        table,
      ].join('\n')
    },
  },
  {
    id: 'replicas',
    title: 'Reads on a streaming replica: routes 4, 7, 9 (`bench/replicas.ts`)',
    async make() {
      const load = loadAverage()
      const args = quick ? ['--rounds', '1', '--duration', '2', '--warmup', '1'] : ['--rounds', '2']
      const text = await tool('bench/replicas.ts', args)
      const table = text.slice(text.indexOf('Routes ')).trim()
      return [await provenance(`npx tsx bench/replicas.ts ${args.join(' ')}`, load), '', table].join('\n')
    },
  },
  {
    id: 'mixed',
    title: 'Steady state: reads beside token rotation (`npm run bench:mixed`, issue 45)',
    async make() {
      const load = loadAverage()
      const args = quick ? ['--duration', '6', '--window', '2', '--warmup', '1'] : []
      const text = await tool('bench/mixed.ts', [...args, '--database-url', url('_mixed')])
      const table = text.slice(text.indexOf('Reads ')).trim()
      return [await provenance(`npm run bench:mixed -- ${args.join(' ')}`, load), '', table].join('\n')
    },
  },
  {
    id: 'nested',
    title: 'A deeply nested JSON body (issue 26): `bench/nested-json.ts`',
    async make() {
      const load = loadAverage()
      const text = await tool('bench/nested-json.ts', [])
      return [await provenance('npx tsx bench/nested-json.ts', load), '', '```text', text.trim(), '```'].join('\n')
    },
  },
  {
    id: 'fairness',
    title: 'Fair under load (issue 46): `npm run bench:fairness`',
    async make() {
      // Its own provenance line (machine, commit, load average) follows its heading, which is this section's.
      const text = await tool('bench/fairness.ts', [])
      return text.slice(text.indexOf('\n') + 1).trim()
    },
  },
  {
    id: 'login-fairness',
    title: "The owner's logins while strangers flood the hashing queue (issue 42): `bench/login-fairness.ts`",
    async make() {
      const load = loadAverage()
      const args = quick ? ['--seconds', '3', '--guessers', '30'] : []
      const text = await tool('bench/login-fairness.ts', args)
      return [await provenance(`npx tsx bench/login-fairness.ts ${args.join(' ')}`.trim(), load), '', text.trim()].join('\n')
    },
  },
]

const BEGIN = (id: string) => `<!-- results:${id}:start -->`
const END = (id: string) => `<!-- results:${id}:end -->`

/** The sections after the volume part, each between its markers, kept when not rerun. */
function keptSection(text: string, id: string): string | undefined {
  const start = text.indexOf(BEGIN(id))
  const end = text.indexOf(END(id))
  return start >= 0 && end > start ? text.slice(start, end + END(id).length) : undefined
}

async function main(): Promise<void> {
  const only = values.only.split(',').filter(Boolean)
  const runs = (id: string) => only.length === 0 || only.includes(id)
  const previous = existsSync(out) ? readFileSync(out, 'utf8') : ''
  try {
    // The bench writes its own part and keeps the file from the volume marker on.
    if (runs('bench')) {
      const timing = quick ? ['--duration', '2', '--warmup', '1', '--soak', '4', '--startup-runs', '1'] : ['--rounds', '3']
      await tool('bench/run.ts', [...timing, '--database-url', url(''), '--out', values.out])
    }
    if (runs('volume')) {
      const volumeName = `${values.prefix}_volume_${volumeScale.replace('.', '_')}`
      const reuse = await databaseExists(volumeName)
      // One round: each round is a table, and the file stays under 20 KB.
      const timing = quick ? ['--rounds', '1', '--duration', '1', '--probes', '20'] : ['--rounds', '1']
      await tool('bench/run.ts', [
        '--volume',
        'production',
        '--scale',
        volumeScale,
        ...timing,
        ...(reuse ? ['--reuse-volume'] : []),
        '--database-url',
        url(''),
        '--volume-database-url',
        `${values['base-url']}/${volumeName}`,
        '--out',
        values.out,
      ])
    }
    const text = existsSync(out) ? readFileSync(out, 'utf8') : ''
    const volumeEnd = '<!-- volume:end -->'
    const head = text.includes(volumeEnd) ? text.slice(0, text.indexOf(volumeEnd) + volumeEnd.length) : text.trimEnd()
    const parts: string[] = []
    for (const section of SECTIONS) {
      const kept = keptSection(previous, section.id)
      const body = runs(section.id) ? `${BEGIN(section.id)}\n\n## ${section.title}\n\n${await section.make()}\n\n${END(section.id)}` : kept
      if (body) parts.push(body)
      // Written after each step, so that a failure later keeps what is done.
      writeFileSync(out, `${head}\n\n${parts.join('\n\n')}\n`)
    }
    const size = readFileSync(out).length
    say(`\nwritten to ${values.out} (${(size / 1024).toFixed(1)} KiB)${size > 20 * 1024 ? ': over 20 KiB, shorten a section' : ''}`)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

await main()
