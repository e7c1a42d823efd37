// `npm run dev:reload-time [-- --runs 10 --file src/app.ts]`: how long `npm run dev` takes from a
// save to the new code answering. Starts `npm run dev` on a free port and a new embedded database
// in a temporary folder, then saves FILE again (same bytes, as an editor's save) RUNS times; each
// time waits for the dev server's next "listening on" line, then for /health/live to answer, and
// prints the time since the save; at the end the median and the 90th percentile.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { get } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import process from 'node:process'
import { setTimeout } from 'node:timers'
import { parseArgs } from 'node:util'

const root = path.join(import.meta.dirname, '..')
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    file: { type: 'string', default: 'src/app.ts' },
    command: { type: 'string', default: 'npm run dev' },
  },
})
const runs = Number(values.runs)
const file = path.join(root, values.file)

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const port = await freePort()
const dataDir = mkdtempSync(path.join(tmpdir(), 'dev-reload-'))
const child = spawn(values.command, {
  cwd: root,
  shell: true,
  detached: true, // its own process group: npm, the dev server and pino-pretty stop together
  env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: '0', PGLITE_DIR: path.join(dataDir, 'pglite') },
  stdio: ['ignore', 'pipe', 'pipe'],
})
let listened = 0
let output = ''
const hear = (chunk) => {
  output += String(chunk)
  listened = output.split('listening on').length - 1
}
child.stdout.on('data', hear)
child.stderr.on('data', hear)
const stop = () => {
  try {
    process.kill(-child.pid, 'SIGINT')
  } catch {
    // gone already
  }
}
process.on('exit', () => {
  stop()
  rmSync(dataDir, { recursive: true, force: true })
})

/** Waits for the `count`-th "listening on" line, then for /health/live to answer 200. */
async function answering(count, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs
  while (listened < count) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no "listening on" line #${count}:\n${output}`)
    await sleep(5)
  }
  for (;;) {
    // A new connection each time, as curl: one kept alive could still reach the previous version.
    const live = await new Promise((resolve) =>
      get(`http://127.0.0.1:${port}/health/live`, { agent: false }, (response) => {
        response.resume()
        resolve(response.statusCode === 200)
      }).on('error', () => resolve(false)),
    )
    if (live) return
    if (Date.now() > deadline) throw new Error(`/health/live did not answer:\n${output}`)
    await sleep(5)
  }
}

const firstStart = Date.now()
await answering(1)
process.stdout.write(`first start (new embedded database): ${Date.now() - firstStart} ms\n`)
const times = []
const text = readFileSync(file)
for (let run = 1; run <= runs; run++) {
  await sleep(1000) // the watcher settles; a save is a human's, not a burst
  const saved = performance.now()
  writeFileSync(file, text)
  await answering(listened + 1)
  times.push(performance.now() - saved)
  process.stdout.write(`save ${run}: answering after ${Math.round(times.at(-1))} ms\n`)
}
times.sort((a, b) => a - b)
const quantile = (q) => Math.round(times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)])
process.stdout.write(`${values.command}, ${values.file} saved ${runs} times: median ${quantile(0.5)} ms, p90 ${quantile(0.9)} ms\n`)
process.exit(0)
