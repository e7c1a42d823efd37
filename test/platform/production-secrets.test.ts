import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
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

describe('the production image and the demo (issue 15, item 9)', () => {
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
    expect(output).toContain('configuration error: JWT_SIGNING_KEY, LEGACY_SECRET_KEY, ESIGN_WEBHOOK_SECRETS: required in production')
    expect(output).toContain('ALLOW_DEMO_SECRETS=true')
    // Nothing was created: the demo users never reached a database.
    expect(await readdir(dataDir)).toEqual([])
  })

  it('serves the demo in production only with the explicit opt-in', async () => {
    server = await startServerProcess({ NODE_ENV: 'production', ALLOW_DEMO_SECRETS: 'true' })
    const response = await fetch(`${server.baseUrl}/health/ready`)
    expect(response.status).toBe(200)
  })
})
