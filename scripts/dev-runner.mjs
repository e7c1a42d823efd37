// The process behind `npm run dev` (started by scripts/dev.mjs): serves src/dev-server.ts and, on
// every save under src/, schemas/ or db/, bundles it again (esbuild, incrementally, the packages
// left to node_modules), imports the new bundle and swaps the apps, the database staying open.
// A save that does not build, or whose app fails to start, leaves the previous version serving.
// It exits with RESTART, for scripts/dev.mjs to start a fresh process, when what it cannot reload
// changed (itself, the packages, the TypeScript settings), and every RELOADS_PER_PROCESS reloads:
// each imported version stays in memory (an ES module is never unloaded).
import { watch } from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import process from 'node:process'
import { clearTimeout, setTimeout } from 'node:timers'
import { pathToFileURL } from 'node:url'
import { context } from 'esbuild'

const root = path.join(import.meta.dirname, '..')
const outfile = path.join(root, 'dist', 'dev', 'dev-server.js')
const WATCHED = ['src', 'schemas', 'db']
const RESTART_ON = new Set(['package.json', 'package-lock.json', 'tsconfig.json', 'dev-runner.mjs', 'dev.mjs'])
const RESTART = 75
// ~5 MB each, most of it the source map Node keeps for each version's stack traces.
const RELOADS_PER_PROCESS = 50
/** Editors' swap and backup files. */
const IGNORED = /(~|\.sw[a-p]|\.tmp|^\.#.*|^4913)$/

/** A line pino-pretty shows like the service's own. */
function log(level, msg, fields = {}) {
  process.stdout.write(`${JSON.stringify({ level, time: Date.now(), pid: process.pid, msg, ...fields })}\n`)
}
const INFO = 30
const ERROR = 50

const builder = await context({
  absWorkingDir: root,
  entryPoints: ['src/dev-server.ts'],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  // Loaded once by Node and shared by every version: only our code is evaluated again.
  packages: 'external',
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'silent',
})

const state = {} // src/dev-server.ts's DevState: the database, opened by the first version
let current // { devApp, module } serving now
const retiring = new Set() // previous versions' closes still finishing their last requests
let version = 0
let stopping = false

async function stop(code, why) {
  if (stopping) return
  stopping = true
  if (why) log(INFO, why)
  await loading // a load under way finishes first: it may be opening the database
  await Promise.all(retiring)
  await current?.devApp.close().catch((error) => log(ERROR, 'closing the app failed', { err: error.stack }))
  await state.database?.db.destroy().catch((error) => log(ERROR, 'closing the database failed', { err: error.stack }))
  await builder.dispose()
  process.exit(code)
}

/** A known start problem (a busy port, a bad variable) on the first load: as `npm start` would, the one line, and exit. */
function stoppedAtStart(first, line) {
  if (!first || !line) return false
  process.stderr.write(`${line}\n`)
  void stop(1)
  return true
}

/** Builds and imports the code as saved, starts its app and retires the previous one. */
async function load(reason) {
  const started = performance.now()
  const first = current === undefined
  const phases = {}
  const lap = (phase, since) => (phases[phase] = Math.round(performance.now() - since))
  let module
  try {
    await builder.rebuild()
    lap('buildMs', started)
    const importing = performance.now()
    module = await import(`${pathToFileURL(outfile).href}?version=${++version}`)
    lap('importMs', importing)
  } catch (error) {
    const errors = error.errors?.map((e) => `${e.location ? `${e.location.file}:${e.location.line}:${e.location.column}: ` : ''}${e.text}`)
    log(ERROR, first ? 'the code does not build: save a fix' : 'the code does not build: the previous version serves on', {
      err: errors?.join('\n') ?? error.stack,
    })
    return
  }
  let next
  const creating = performance.now()
  try {
    next = await module.createDevApp(state)
    lap('appMs', creating)
  } catch (error) {
    const line = module.startProblem(error)
    if (!stoppedAtStart(first, line)) {
      log(ERROR, `${line ?? 'the app did not start'}${first ? ': save a fix' : ': the previous version serves on'}`, line ? {} : { err: error.stack })
    }
    return
  }
  const previous = current
  current = { devApp: next, module }
  // The previous version stops listening at once; its last requests finish meanwhile.
  const closing = previous?.devApp.close().catch((error) => log(ERROR, 'closing the previous version failed', { err: error.stack }))
  const listening = performance.now()
  try {
    await next.listen()
    lap('listenMs', listening)
  } catch (error) {
    const line = module.startProblem(error)
    if (!stoppedAtStart(first, line)) log(ERROR, line ?? 'listening failed', line ? {} : { err: error.stack })
  }
  if (!first) log(INFO, `reloaded in ${Math.round(performance.now() - started)} ms (${reason})`, phases)
  if (closing) {
    retiring.add(closing)
    void closing.then(() => retiring.delete(closing))
  }
}

// Saves arrive in bursts (write, then chmod or rename): gathered for a moment, one load each.
let changes = new Set()
let timer
let loading = Promise.resolve()
function changed(file) {
  if (stopping || IGNORED.test(path.basename(file))) return
  changes.add(file)
  clearTimeout(timer)
  timer = setTimeout(() => {
    const files = [...changes]
    changes = new Set()
    loading = loading.then(() => {
      if (stopping) return undefined
      if (version > RELOADS_PER_PROCESS) {
        void stop(RESTART, `restarting after ${RELOADS_PER_PROCESS} reloads, to let go of their memory`)
        return undefined
      }
      return load(files.join(', '))
    })
  }, 15)
}

for (const folder of WATCHED) {
  watch(path.join(root, folder), { recursive: true }, (_event, file) => file && changed(path.join(folder, file)))
}
for (const folder of ['.', 'scripts']) {
  watch(path.join(root, folder), (_event, file) => {
    if (!RESTART_ON.has(file)) return
    void stop(RESTART, `${path.join(folder, file)} changed: restarting`)
  })
}
process.on('SIGINT', () => void stop(0, 'SIGINT: stopping'))
process.on('SIGTERM', () => void stop(0, 'SIGTERM: stopping'))
// A bug of the code being edited must not end the session: said, and the next save loads a fix.
process.on('uncaughtException', (error) => log(ERROR, 'uncaught exception (save a fix to reload)', { err: error.stack }))
process.on('unhandledRejection', (error) => log(ERROR, 'unhandled rejection (save a fix to reload)', { err: error?.stack ?? String(error) }))

loading = load('start')
