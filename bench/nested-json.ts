/**
 * Issue 26, item 2: what one deeply nested JSON body with a lone surrogate costs the event loop.
 * Prints the parser's CPU per body, route 1's time through app.inject, and /health/live's p50 on
 * a real process (tsx, embedded database) while 8 such bodies are in flight, again and again.
 *
 *   npx tsx bench/nested-json.ts [depth]     # depth 8000 by default (a 16 KiB body)
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { wellFormedJsonParser } from '../src/lib/well-formed-json.js'

const depth = Number(process.argv[2] ?? 8000)
const body = `{"email":"a@b.example","password":${'['.repeat(depth)}"\\ud800"${']'.repeat(depth)}}`
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN

async function timed(times: number, run: () => Promise<unknown>): Promise<number> {
  const samples: number[] = []
  for (let i = 0; i < times; i += 1) {
    const started = performance.now()
    await run()
    samples.push(performance.now() - started)
  }
  return median(samples)
}

async function inProcess(): Promise<void> {
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', METRICS_PORT: '0', PGLITE_DIR: 'memory://' })
  const app = await buildApp(config)
  const parse = wellFormedJsonParser(app)
  const parser = () => new Promise((resolve) => parse({} as never, body, (error) => resolve(error)))
  const route = () => app.inject({ method: 'POST', url: '/api/auth/v1/token', headers: { 'content-type': 'application/json' }, payload: body })
  const first = await route()
  console.log(`body ${body.length} bytes, depth ${depth}: route 1 answers ${first.statusCode} ${first.json<{ code: string }>().code}`)
  console.log(`parser, per body: ${(await timed(20, parser)).toFixed(2)} ms (median of 20)`)
  console.log(`route 1 via app.inject, per body: ${(await timed(20, route)).toFixed(2)} ms (median of 20)`)
  await app.close()
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

async function realProcess(): Promise<void> {
  const port = await freePort()
  const dataDir = await mkdtemp(path.join(tmpdir(), 'nested-json-'))
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', METRICS_PORT: '0', PGLITE_DIR: dataDir },
    stdio: 'ignore',
  })
  const base = `http://127.0.0.1:${port}`
  const live = async () => {
    const started = performance.now()
    await (await fetch(`${base}/health/live`)).arrayBuffer()
    return performance.now() - started
  }
  try {
    for (let up = false; !up;)
      up = await live().then(
        () => true,
        () => new Promise((resolve) => setTimeout(() => resolve(false), 200)),
      )
    const quiet: number[] = []
    for (let i = 0; i < 40; i += 1) quiet.push(await live())
    let stop = false
    const nested = async () => {
      while (!stop)
        await (await fetch(`${base}/api/auth/v1/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).arrayBuffer()
    }
    const load = Array.from({ length: 8 }, nested)
    const loaded: number[] = []
    for (let i = 0; i < 40; i += 1) loaded.push(await live())
    stop = true
    await Promise.all(load)
    console.log(`/health/live p50: ${median(quiet).toFixed(1)} ms idle, ${median(loaded).toFixed(1)} ms with 8 nested bodies in flight`)
  } finally {
    child.kill('SIGKILL')
    await rm(dataDir, { recursive: true, force: true })
  }
}

await inProcess()
await realProcess()
