import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { DEMO_PASSWORD } from '../../db/seed/demo.js'
import { DEMO_SECRETS } from '../../src/config.js'
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js'

/** Runs the real entry point and returns its exit code and output, for starts that must fail. */
function runServer(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += String(chunk)))
  child.stderr.on('data', (chunk: Buffer) => (output += String(chunk)))
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(killer)
      resolve({ code, output })
    }),
  )
}

/** Strong secrets of the operator's own (the minimums of docs/operations.md). */
const STRONG_SECRETS = {
  JWT_SIGNING_KEY: 'Zq3vL9xT2mR7wK4pN8cB1fH6jD5sG0aY',
  LEGACY_SECRET_KEY: 'k#8v!q2@z$w5^m9&x3*p7(r1)t6_y4-n0=b+c%d;e:f<g>h?j.',
  ESIGN_WEBHOOK_SECRETS: 'u7Wn2Kx9Qe4Rb6Tz1Ym8Lp3Vc5Hs0JdA',
}

/** The end of every refusal of secrets: where they are needed, and how to make one. */
const OWN_SECRETS =
  '(secrets of your own, in production and on any DATABASE_URL: the demo values serve the embedded demo database only; ' +
  "make each with `openssl rand -hex 32` (LEGACY_SECRET_KEY: the old platform's SECRET_KEY, if 50 characters or more); " +
  'minimums in docs/operations.md)'

const logIn = (baseUrl: string) =>
  fetch(`${baseUrl}/api/auth/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'alice@acme.example', password: DEMO_PASSWORD }),
  })

describe('the production image and the demo (issue 15, item 9; issue 26, items 1, 3 and 4)', () => {
  let dataDir: string | undefined
  let server: ServerProcess | undefined
  afterEach(async () => {
    await server?.cleanup()
    server = undefined
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
    dataDir = undefined
  })

  it('refuses to start in production on the embedded database with demo secrets, and names them', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'receivables-prod-'))
    const { code, output } = await runServer({ NODE_ENV: 'production', PGLITE_DIR: path.join(dataDir, 'pglite') })
    expect(code).toBe(1)
    expect(output).toContain(
      'configuration error: DATABASE_URL: required in production (or ALLOW_DEMO_DATA=true to serve the embedded demo and its public logins); ' +
        `JWT_SIGNING_KEY: required; LEGACY_SECRET_KEY: required; ESIGN_WEBHOOK_SECRETS: required ${OWN_SECRETS}`,
    )
    expect(output).not.toContain('ALLOW_DEMO_SECRETS')
    // Nothing was created: the demo users never reached a database.
    expect(await readdir(dataDir)).toEqual([])
  })

  it("the image's default (production, strong secrets, no DATABASE_URL) serves no demo login: it refuses, naming what to set", async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'receivables-prod-'))
    const { code, output } = await runServer({ NODE_ENV: 'production', PGLITE_DIR: path.join(dataDir, 'pglite'), ...STRONG_SECRETS })
    expect(code).toBe(1)
    expect(output.trim()).toBe(
      'configuration error: DATABASE_URL: required in production (or ALLOW_DEMO_DATA=true to serve the embedded demo and its public logins)',
    )
    expect(output).not.toContain(DEMO_PASSWORD)
    expect(await readdir(dataDir)).toEqual([])
  })

  it('serves the embedded demo in production only with ALLOW_DEMO_DATA=true, and says so in a warning', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'receivables-prod-'))
    // DATABASE_URL empty: the embedded database in both test runs.
    const env = { NODE_ENV: 'production', DATABASE_URL: '', PGLITE_DIR: path.join(dataDir, 'pglite'), ...STRONG_SECRETS }
    server = await startServerProcess({ ...env, ALLOW_DEMO_DATA: 'true' })
    expect((await logIn(server.baseUrl)).status).toBe(200)
    const start = server.output.map((line) => JSON.parse(line) as { level: number; msg: string }).find((line) => line.msg.startsWith('listening on'))
    expect(start?.level).toBe(40)
    // The warning names the demo accounts (issue 33, item 3).
    expect(start?.msg).toMatch(
      /demo login alice@acme\.example \/ Demo#2026!\): DEMO DATA IN PRODUCTION \(ALLOW_DEMO_DATA=true\), anyone can log in as its users: alice@acme\.example, bob@beta\.example, carol@gamma\.example, dave@delta\.example, erin@acme\.example, frank@acme\.example, lucas@legacy\.example, maria@legacy\.example$/,
    )
  })

  it("the docs' fresh PostgreSQL recipe without NODE_ENV and without secrets refuses to start, naming every secret and how to make one (issue 33, item 2)", async () => {
    // Refused before any connection: the same on either test run.
    const { code, output } = await runServer({ DATABASE_URL: 'postgres://127.0.0.1:1/never-reached' })
    expect(code).toBe(1)
    expect(output.trim()).toBe(
      `configuration error: JWT_SIGNING_KEY: required; LEGACY_SECRET_KEY: required; ESIGN_WEBHOOK_SECRETS: required ${OWN_SECRETS}`,
    )
    // Spelled out, the demo values are refused the same, whatever NODE_ENV says.
    for (const NODE_ENV of ['development', 'test']) {
      const demo = await runServer({ NODE_ENV, DATABASE_URL: 'postgres://127.0.0.1:1/never-reached', ...DEMO_SECRETS })
      expect(demo.code).toBe(1)
      expect(demo.output.trim()).toBe(
        `configuration error: JWT_SIGNING_KEY: a demo value; LEGACY_SECRET_KEY: a demo value; ESIGN_WEBHOOK_SECRETS: a demo value ${OWN_SECRETS}`,
      )
    }
  })

  it('ALLOW_DEMO_SECRETS=true no longer lets the demo secrets into production, and the refusal says so (issue 33, item 2)', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'receivables-prod-'))
    const { code, output } = await runServer({
      NODE_ENV: 'production',
      PGLITE_DIR: path.join(dataDir, 'pglite'),
      ALLOW_DEMO_SECRETS: 'true',
      ALLOW_DEMO_DATA: 'true',
    })
    expect(code).toBe(1)
    expect(output.trim()).toBe(
      `configuration error: JWT_SIGNING_KEY: required; LEGACY_SECRET_KEY: required; ESIGN_WEBHOOK_SECRETS: required ${OWN_SECRETS.slice(0, -1)}; ` +
        'ALLOW_DEMO_SECRETS is no longer read)',
    )
    expect(await readdir(dataDir)).toEqual([])
  })

  it('refuses weak secrets and demo values in any case, fallbacks included, naming each variable at once', async () => {
    const { code, output } = await runServer({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://127.0.0.1:1/never-reached',
      JWT_SIGNING_KEY: 'a'.repeat(40),
      LEGACY_SECRET_KEY: 'a',
      LEGACY_SECRET_KEY_FALLBACKS: 'demo-legacy-secret',
      ESIGN_WEBHOOK_SECRETS: 'DEMO-ESIGN-SECRET',
      ESIGN_WEBHOOK_HMAC_KEY: 'a',
    })
    expect(code).toBe(1)
    expect(output.trim()).toBe(
      'configuration error: JWT_SIGNING_KEY: fewer than 8 different characters; LEGACY_SECRET_KEY: shorter than 50 characters; ' +
        `LEGACY_SECRET_KEY_FALLBACKS: a demo value; ESIGN_WEBHOOK_SECRETS: a demo value; ESIGN_WEBHOOK_HMAC_KEY: shorter than 32 characters ${OWN_SECRETS}`,
    )
  })
})
