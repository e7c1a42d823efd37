import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { DEMO_PASSWORD } from '../../db/seed/demo.js'
import { DEMO } from '../../db/seed/ids.js'
import { freePort } from '../helpers/ports.js'
import { startServerProcess } from '../helpers/server-process.js'
import { runProcess, type ProcessRun } from '../helpers/run-process.js'
import { scaled } from '../helpers/slowness.js'

/**
 * The operators' commands (src/cli/) as real processes, as `npm run migrate|seed|confirmation-link`
 * runs them (issue 18, item 4): they read only the settings they use, and every failure is one line
 * that names the cause and the fix, never a stack trace.
 */

type Run = ProcessRun

function runCommand(
  command: 'migrate' | 'seed' | 'unseed' | 'confirmation-link' | 'retention',
  args: string[],
  env: Record<string, string>,
): Promise<Run> {
  // Nothing inherited but PATH: no DATABASE_URL, secrets or NODE_ENV from the test run.
  return runProcess(process.execPath, ['--import', 'tsx', `src/cli/${command}.ts`, ...args], { PATH: process.env.PATH ?? '', ...env })
}

/** One line on stderr, and no stack trace. */
function expectOneLine(run: Run): string {
  const lines = run.stderr.split('\n').filter(Boolean)
  expect(lines, run.stderr).toHaveLength(1)
  expect(run.stderr).not.toMatch(/^\s+at /m)
  return lines[0] ?? ''
}

const SEED_REFUSAL =
  'seed: configuration error: ALLOW_DEMO_DATA: the demo data (users with a public password) is refused in production; ' +
  'set ALLOW_DEMO_DATA=true to load it anyway'

/** seed on a database a production migrate or start has marked (issue 33, item 3). */
const MARKED_REFUSAL =
  /^seed: this database is marked production \(by (migrate|the service's start) at \d{4}-\d\d-\d\dT[\d:.]+Z\): the demo data \(users with a public password\) is refused there; set ALLOW_DEMO_DATA=true if a demo or staging deployment is meant$/

/** A company of the operator's own, beside the demo's. */
const OWN = { company: '2f000000-0000-4000-8000-000000000001', role: '3f000000-0000-4000-8000-000000000001' }

/** Every demo account (docs/demo-data.md), as production names them. */
const DEMO_EMAILS = [
  'alice@acme.example',
  'bob@beta.example',
  'carol@gamma.example',
  'dave@delta.example',
  'erin@acme.example',
  'frank@acme.example',
  'lucas@legacy.example',
  'maria@legacy.example',
]

const DEMO_ACCOUNTS_REFUSAL =
  `the database holds the demo accounts ${DEMO_EMAILS.join(', ')}, whose passwords are published (docs/demo-data.md): ` +
  'remove the demo data with `npm run unseed` (in the image: `node dist/unseed.js`), or set ALLOW_DEMO_DATA=true if a demo or staging deployment is meant'

const UNSEED_DONE = `demo data removed: the users ${DEMO_EMAILS.join(', ')}; 4 companies with their roles, titles, documents and accounts\n`

/** An old platform's key as Django makes them (50 characters). */
const LEGACY_KEY = 'k#8v!q2@z$w5^m9&x3*p7(r1)t6_y4-n0=b+c%d;e:f<g>h?j.'

const STRONG_SECRETS = {
  JWT_SIGNING_KEY: 'Zq3vL9xT2mR7wK4pN8cB1fH6jD5sG0aY',
  LEGACY_SECRET_KEY: LEGACY_KEY,
  ESIGN_WEBHOOK_SECRETS: 'u7Wn2Kx9Qe4Rb6Tz1Ym8Lp3Vc5Hs0JdA',
}

const demoLogin = (baseUrl: string) =>
  fetch(`${baseUrl}/api/auth/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'alice@acme.example', password: DEMO_PASSWORD }),
  })

/** A local port nothing listens on. */
const closedPort = freePort

// Each command is a process of its own (~1-3 s, more on a new embedded database): generous bounds.
const SLOW = scaled(180_000)

describe('the commands on the embedded database', { timeout: SLOW }, () => {
  let dataDir: string | undefined
  afterEach(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
    dataDir = undefined
  })

  it('migrate and seed need no secret in production, and ignore settings they do not use', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'receivables-cli-'))
    // Production without any secret, and a service setting that would stop the service's start.
    const env = { NODE_ENV: 'production', PGLITE_DIR: path.join(dataDir, 'pglite'), JWT_SIGNING_KEY: 'too short', PORT: 'x' }
    const migrate = await runCommand('migrate', [], env)
    expect(migrate.stderr).toBe('')
    expect(migrate.code).toBe(0)
    expect(migrate.stdout).toMatch(/^applied: 0001_identity, /)
    const again = await runCommand('migrate', [], env)
    expect(again.stdout).toBe('database is up to date\n')
    // The demo data in production only when asked for (issue 26, item 1).
    const refusedSeed = await runCommand('seed', [], env)
    expect(refusedSeed.code).toBe(1)
    expect(expectOneLine(refusedSeed)).toBe(SEED_REFUSAL)
    const seed = await runCommand('seed', [], { ...env, ALLOW_DEMO_DATA: 'true' })
    expect(seed.code).toBe(0)
    expect(seed.stdout).toBe('demo data loaded\n')

    // confirmation-link needs the old platform's secret, and only that one.
    const refused = await runCommand('confirmation-link', ['maria@legacy.example'], env)
    expect(refused.code).toBe(1)
    const line = expectOneLine(refused)
    expect(line).toMatch(/^confirmation-link: configuration error: LEGACY_SECRET_KEY: required \(/)
    expect(line).not.toMatch(/JWT|ESIGN|DATABASE_URL: required/)
    const weak = await runCommand('confirmation-link', ['maria@legacy.example'], { ...env, LEGACY_SECRET_KEY: 'the-old-secret' })
    expect(expectOneLine(weak)).toMatch(/^confirmation-link: configuration error: LEGACY_SECRET_KEY: shorter than 50 characters/)
    const link = await runCommand('confirmation-link', ['maria@legacy.example'], { ...env, LEGACY_SECRET_KEY: LEGACY_KEY })
    expect(link.code).toBe(0)
    expect(link.stdout).toMatch(/^\/api\/registration\/v1\/confirm-migration-account\/[\w-]+\/[\w-]+\n$/)
    const dryRun = await runCommand('retention', ['--dry-run'], env)
    expect(dryRun.stdout).toMatch(/^dry run, nothing deleted: \d+ token families, \d+ webhook deliveries, \d+ idempotency keys would be deleted\n$/)
    const unknown = await runCommand('retention', ['--dryrun'], env)
    expect([unknown.code, unknown.stderr]).toEqual([2, 'unknown argument --dryrun; usage: npm run retention [-- --dry-run]\n'])
    const confirmed = await runCommand('confirmation-link', ['lucas@legacy.example'], { ...env, LEGACY_SECRET_KEY: LEGACY_KEY })
    expect(confirmed.code).toBe(1)
    expect(expectOneLine(confirmed)).toBe(
      'confirmation-link: lucas@legacy.example: this migrated account is already confirmed; the user logs in with their password',
    )
  })

  it('confirmation-link prints a full URL on PUBLIC_BASE_URL, validated as the service validates it (issue 33, item 13)', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'receivables-cli-'))
    // A new embedded database gets the demo data, as the service's start would give it.
    const env = { PGLITE_DIR: path.join(dataDir, 'pglite'), LEGACY_SECRET_KEY: LEGACY_KEY }
    const full = await runCommand('confirmation-link', ['maria@legacy.example'], {
      ...env,
      PUBLIC_BASE_URL: 'https://app.platform.example/',
    })
    expect(full.stdout).toMatch(/^https:\/\/app\.platform\.example\/api\/registration\/v1\/confirm-migration-account\/[\w-]+\/[\w-]+\n$/)
    const badBase = await runCommand('confirmation-link', ['maria@legacy.example'], {
      ...env,
      PUBLIC_BASE_URL: 'app.platform.example',
    })
    expect(expectOneLine(badBase)).toMatch(/^confirmation-link: configuration error: invalid environment: PUBLIC_BASE_URL: /)
  })

  it('seed refuses a database that migrate marked production; unseed removes the demo data (issue 33, item 3)', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'receivables-cli-'))
    const env = { PGLITE_DIR: path.join(dataDir, 'pglite') }
    const migrate = await runCommand('migrate', [], { ...env, NODE_ENV: 'production' })
    expect(migrate.code).toBe(0)
    expect(migrate.stdout).toMatch(/\nmarked as a production database: `seed` refuses the demo data there unless ALLOW_DEMO_DATA=true\n$/)
    // Without NODE_ENV, as `npm run seed` was run: the mark refuses it.
    const refused = await runCommand('seed', [], env)
    expect(refused.code).toBe(1)
    expect(expectOneLine(refused)).toMatch(MARKED_REFUSAL)
    const seed = await runCommand('seed', [], { ...env, ALLOW_DEMO_DATA: 'true' })
    expect(seed.stdout).toBe('demo data loaded\n')
    const unseed = await runCommand('unseed', [], env)
    expect(unseed.code).toBe(0)
    expect(unseed.stdout).toBe(UNSEED_DONE)
    expect((await runCommand('unseed', [], env)).stdout).toBe('no demo data; nothing to do\n')
  })

  it("the embedded demo's start prints each migrated user's confirmation link (route 10), which confirms while it serves (issue 44, item 4)", async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'receivables-demo-'))
    const demo = await startServerProcess({ DATABASE_URL: '', PGLITE_DIR: path.join(dataDir, 'pglite') })
    try {
      const linkLine = async () => {
        for (;;) {
          const found = demo.output.find((line) => line.includes('demo confirmation link'))
          if (found) return JSON.parse(found) as { email: string; link: string }
          if (demo.child.exitCode !== null) throw new Error(demo.output.join('\n'))
          await Promise.race([new Promise((resolve) => demo.child.stdout?.once('data', resolve)), demo.exited])
        }
      }
      const { email, link } = await linkLine()
      expect(email).toBe('maria@legacy.example')
      expect(link).toMatch(new RegExp(`^${demo.baseUrl}/api/registration/v1/confirm-migration-account/[\\w-]+/[\\w-]+$`))
      const confirm = await fetch(link, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ password: 'a-new-password-of-marias-own' }),
      })
      expect(confirm.status).toBe(201)
    } finally {
      await demo.cleanup()
    }
  })

  it('names a data folder it cannot make, and the fix', async () => {
    const run = await runCommand('migrate', [], { PGLITE_DIR: '/dev/null/pglite' })
    expect(run.code).toBe(1)
    expect(expectOneLine(run)).toBe(
      "migrate: cannot make or write the embedded database's folder /dev/null/pglite (ENOTDIR): " +
        'set PGLITE_DIR to a folder this user can write, or DATABASE_URL to a PostgreSQL server',
    )
  })
})

describe('the commands and a PostgreSQL server they cannot use', { timeout: SLOW }, () => {
  it('a port where no server listens: one line naming the host and port, and the fix', async () => {
    const port = await closedPort()
    for (const command of ['migrate', 'seed', 'retention'] as const) {
      const run = await runCommand(command, [], { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/receivables` })
      expect(run.code).toBe(1)
      expect(expectOneLine(run)).toBe(
        `${command}: cannot connect to PostgreSQL at 127.0.0.1:${port} (connection refused): start the server, or fix the host and port in DATABASE_URL`,
      )
    }
  })

  it('a host that does not exist', async () => {
    const run = await runCommand('migrate', [], { DATABASE_URL: 'postgres://postgres@no-such-host.invalid:5432/receivables' })
    expect(run.code).toBe(1)
    expect(expectOneLine(run)).toMatch(/^migrate: (host "no-such-host\.invalid" not found: fix the host in DATABASE_URL|cannot reach|no answer from)/)
  })

  it('confirmation-link refuses a missing or demo LEGACY_SECRET_KEY on any DATABASE_URL, whatever NODE_ENV (issue 33, item 13)', async () => {
    // Refused before connecting: a link signed with the demo key would be refused by the service.
    const port = await closedPort()
    const cases: Record<string, string>[] = [
      {},
      { NODE_ENV: 'development' },
      { LEGACY_SECRET_KEY: 'demo-legacy-secret' },
      { LEGACY_SECRET_KEY: 'DEMO-LEGACY-SECRET' },
    ]
    for (const env of cases) {
      const run = await runCommand('confirmation-link', ['maria@legacy.example'], {
        DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/receivables`,
        ...env,
      })
      expect(run.code).toBe(1)
      const line = expectOneLine(run)
      expect(line).toMatch(
        /^confirmation-link: configuration error: LEGACY_SECRET_KEY: (required|a demo value) \(secrets of your own, in production and on any DATABASE_URL/,
      )
      expect(line).not.toMatch(/JWT|ESIGN/)
    }
  })

  it('a DATABASE_URL that is not one, and an unknown argument', async () => {
    const bad = await runCommand('migrate', [], { DATABASE_URL: 'mysql://localhost/receivables' })
    expect(bad.code).toBe(1)
    expect(expectOneLine(bad)).toMatch(/^migrate: configuration error: invalid environment: DATABASE_URL: /)
    const usage = await runCommand('migrate', ['--create-databse'], {})
    expect(usage.code).toBe(2)
    expect(expectOneLine(usage)).toBe('unknown argument --create-databse; usage: npm run migrate [-- --create-database]')
  })
})

const serverUrl = process.env.TEST_DATABASE_URL

describe.runIf(serverUrl)('the commands on a fresh PostgreSQL server', { timeout: SLOW }, () => {
  const base = new URL(serverUrl ?? 'postgres://localhost/x')
  const database = `${base.pathname.slice(1)}_cli_${process.pid}`
  const url = new URL(base)
  url.pathname = `/${database}`
  url.search = ''
  const databaseUrl = url.toString()

  const dropDatabase = async () => {
    const admin = new pg.Client({ connectionString: base.toString() })
    await admin.connect()
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(database)} WITH (FORCE)`)
    } finally {
      await admin.end()
    }
  }
  afterAll(dropDatabase)

  it('a database that does not exist: one line naming createdb and --create-database', async () => {
    await dropDatabase()
    const createdb = `\`createdb -h ${url.hostname} -p ${url.port || '5432'} -U ${decodeURIComponent(url.username) || 'postgres'} ${database}\``
    // Run by npm (npm run migrate|seed), and directly as in the image.
    for (const [command, npm] of [
      ['migrate', true],
      ['seed', true],
      ['migrate', false],
    ] as const) {
      const run = await runCommand(command, [], { DATABASE_URL: databaseUrl, ...(npm ? { npm_lifecycle_event: command } : {}) })
      expect(run.code).toBe(1)
      expect(expectOneLine(run)).toBe(
        `${command}: database "${database}" does not exist: create it with ${createdb}, ` +
          `or run \`${npm ? 'npm run migrate -- --create-database' : 'node dist/migrate.js --create-database'}\``,
      )
    }
  })

  it("the docs' steps on a fresh server, production on demo accounts refused until unseed or ALLOW_DEMO_DATA=true (issue 33, item 3)", async () => {
    await dropDatabase()
    // The docs' recipe: migrate with the database's credentials alone, no NODE_ENV.
    const env = { DATABASE_URL: databaseUrl }
    const created = await runCommand('migrate', ['--create-database'], env)
    expect(created.stderr).toBe('')
    expect(created.code).toBe(0)
    // Before anything is applied, where to restore to (issue 47): the primary's WAL position and time.
    expect(created.stdout).toMatch(
      new RegExp(
        `^created database "${database}"\nbefore migrating: the primary's WAL at [0-9A-F]+/[0-9A-F]+, \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\+00 \\(a restore target: docs/runbook.md\\)\napplied: 0001_identity, `,
      ),
    )
    const [, lsn, at] = /WAL at (\S+), (.+?) \(/.exec(created.stdout)!
    const admin = new pg.Client({ connectionString: databaseUrl })
    await admin.connect()
    const [position] = (
      await admin.query<{ before: boolean; ago: number }>(
        'SELECT $1::pg_lsn < pg_current_wal_lsn() AS before, extract(epoch FROM now() - $2::timestamptz)::float8 AS ago',
        [lsn, at],
      )
    ).rows
    await admin.end()
    expect(position!.before).toBe(true)
    expect(position!.ago).toBeGreaterThanOrEqual(0)
    expect(position!.ago).toBeLessThan(120)
    // Again: the database is there, nothing to do.
    const again = await runCommand('migrate', ['--create-database'], env)
    expect(again.stdout).toBe('database is up to date\n')
    // The service in production with strong secrets of its own, before any seed: no demo login
    // (issue 26, item 1); its start marks the database production.
    const production = { NODE_ENV: 'production', ...env, ...STRONG_SECRETS }
    const empty = await startServerProcess(production)
    try {
      expect((await fetch(`${empty.baseUrl}/health/ready`)).status).toBe(200)
      expect((await demoLogin(empty.baseUrl)).status).toBe(401)
      expect(empty.output.join('\n')).not.toContain(DEMO_PASSWORD)
    } finally {
      await empty.cleanup()
    }
    // The demo data is refused there, in production and, the database being marked, without NODE_ENV.
    const refusedSeed = await runCommand('seed', [], { ...env, NODE_ENV: 'production' })
    expect(refusedSeed.code).toBe(1)
    expect(expectOneLine(refusedSeed)).toBe(SEED_REFUSAL)
    const markedSeed = await runCommand('seed', [], env)
    expect(markedSeed.code).toBe(1)
    expect(expectOneLine(markedSeed)).toMatch(MARKED_REFUSAL)
    // A demo or staging deployment says so.
    const seed = await runCommand('seed', [], { ...env, ALLOW_DEMO_DATA: 'true' })
    expect(seed.code).toBe(0)
    expect(seed.stdout).toBe('demo data loaded\n')
    const seedAgain = await runCommand('seed', [], { ...env, ALLOW_DEMO_DATA: 'true' })
    expect(seedAgain.stdout).toBe('demo data already present; nothing to do\n')
    const link = await runCommand('confirmation-link', ['maria@legacy.example'], { ...env, LEGACY_SECRET_KEY: LEGACY_KEY })
    expect(link.code).toBe(0)
    expect(link.stdout).toMatch(/^\/api\/registration\/v1\/confirm-migration-account\//)

    // Production on the demo accounts: refused, naming them and the command that removes them.
    await expect(startServerProcess(production)).rejects.toThrow(DEMO_ACCOUNTS_REFUSAL)
    // The database being marked, an instance without NODE_ENV=production on it is refused alike (issue 42, item 5).
    for (const nodeEnv of [{}, { NODE_ENV: 'development' }, { ALLOW_DEMO_DATA: 'false' }] as Record<string, string>[]) {
      await expect(startServerProcess({ ...env, ...STRONG_SECRETS, ...nodeEnv })).rejects.toThrow(DEMO_ACCOUNTS_REFUSAL)
    }

    // Unless a demo or staging deployment is meant: then it serves, warning at start with their names.
    const staging = await startServerProcess({ ...production, ALLOW_DEMO_DATA: 'true' })
    try {
      const start = staging.output
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .find((line) => line.msg.startsWith('listening on'))
      expect(start?.level).toBe(40)
      expect(start?.msg).toContain(`DEMO DATA IN PRODUCTION (ALLOW_DEMO_DATA=true), anyone can log in as its users: ${DEMO_EMAILS.join(', ')}`)
      expect((await demoLogin(staging.baseUrl)).status).toBe(200)
      // Demo accounts on a DATABASE_URL: their confirmation links are the operator's command's only.
      expect(staging.output.filter((line) => line.includes('demo confirmation link'))).toEqual([])
      // The link confirmation-link printed, with the service's own key, is accepted.
      const confirm = await fetch(`${staging.baseUrl}${link.stdout.trim()}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ password: 'a-new-password-of-marias-own' }),
      })
      expect(confirm.status).toBe(201)
    } finally {
      await staging.cleanup()
    }
    // Without NODE_ENV the word is the same, and so is the warning.
    const unmarkedEnv = await startServerProcess({ ...env, ...STRONG_SECRETS, ALLOW_DEMO_DATA: 'true' })
    try {
      expect(unmarkedEnv.output.join('\n')).toContain('DEMO DATA IN PRODUCTION (ALLOW_DEMO_DATA=true)')
    } finally {
      await unmarkedEnv.cleanup()
    }

    // A company of the operator's own that dealt with the demo: its bid on a demo title goes with the
    // demo, the company stays; an account of its that a demo user removed stops unseed, which removes nothing.
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      await client.query(`INSERT INTO companies (id, name, tax_id) VALUES ('${OWN.company}', 'Own Buyer Ltda', '98765432000110')`)
      await client.query(`INSERT INTO company_roles (id, company_id, role) VALUES ('${OWN.role}', '${OWN.company}', 'buyer')`)
      await client.query(
        `INSERT INTO bids (title_id, buyer_company_role_id, monthly_rate, amount, status) VALUES ('${DEMO.titles.t1}', '${OWN.role}', 1.5, 14000, 'active')`,
      )
      await client.query(
        `INSERT INTO bank_accounts (company_id, bank_code, branch, account_number, account_digit, account_type, holder_name, holder_tax_id, removed_at, removed_by)
         VALUES ('${OWN.company}', '341', '0001', '99999', '1', 'checking', 'Own Buyer Ltda', '98765432000110', now(), '${DEMO.users.alice}')`,
      )
      const blocked = await runCommand('unseed', [], env)
      expect(blocked.code).toBe(1)
      expect(expectOneLine(blocked)).toMatch(
        /^unseed: rows of other companies still refer to the demo data \(.*bank_accounts.*\); nothing was removed: /,
      )
      expect((await client.query('SELECT count(*)::int AS n FROM users')).rows[0]).toEqual({ n: 8 })
      await client.query(`DELETE FROM bank_accounts WHERE company_id = '${OWN.company}'`)
    } finally {
      await client.end()
    }

    // `unseed` removes the demo data; production then starts on the database, without demo logins.
    const unseed = await runCommand('unseed', [], env)
    expect(unseed.stderr).toBe('')
    expect(unseed.code).toBe(0)
    expect(unseed.stdout).toBe(UNSEED_DONE)
    const unseedAgain = await runCommand('unseed', [], env)
    expect(unseedAgain.stdout).toBe('no demo data; nothing to do\n')
    const left = new pg.Client({ connectionString: databaseUrl })
    await left.connect()
    try {
      const counts = await left.query(
        'SELECT (SELECT count(*) FROM companies)::int AS companies, (SELECT count(*) FROM company_roles)::int AS roles, (SELECT count(*) FROM bids)::int AS bids',
      )
      expect(counts.rows[0]).toEqual({ companies: 1, roles: 1, bids: 0 })
    } finally {
      await left.end()
    }
    const after = await startServerProcess(production)
    try {
      expect((await fetch(`${after.baseUrl}/health/ready`)).status).toBe(200)
      expect((await demoLogin(after.baseUrl)).status).toBe(401)
    } finally {
      await after.cleanup()
    }
  })
})
