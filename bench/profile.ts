import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The parts of a V8 .cpuprofile (written by `node --cpu-prof`) that a self-time summary needs. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]
  samples: number[]
  timeDeltas: number[]
}

export interface SelfTime {
  name: string
  ms: number
  /** Percent of the busy (non-idle) time. */
  percent: number
}

export interface ProfileSummary {
  busyMs: number
  idleMs: number
  topFunctions: SelfTime[]
  /** Self time grouped by where the code lives: a package, the service, node internals, GC. */
  byOrigin: SelfTime[]
}

/** `fastify`, `pg`, `@fastify/jwt`, `service` (this repository's code), `node` (internals), `(wasm)` or a V8 pseudo-frame. */
function originOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)'
  const modules = url.lastIndexOf('node_modules/')
  if (modules >= 0) {
    const [first, second] = url.slice(modules + 'node_modules/'.length).split('/')
    return first?.startsWith('@') ? `${first}/${second}` : (first ?? url)
  }
  if (url.startsWith('node:')) return 'node'
  if (url.startsWith('wasm://')) return '(wasm)'
  return 'service'
}

/**
 * The service runs as an esbuild bundle (dist/server.js), which starts each module it holds with
 * a `// node_modules/<package>/…` or `// src/…` comment line: the first line of every module, so
 * that a frame in the bundle can be credited to the module, and package, its code comes from.
 */
const bundleModules = new Map<string, { line: number; path: string }[]>()

function modulesOfBundle(url: string): { line: number; path: string }[] {
  const known = bundleModules.get(url)
  if (known) return known
  const modules: { line: number; path: string }[] = []
  try {
    readFileSync(fileURLToPath(url), 'utf8')
      .split('\n')
      .forEach((text, line) => {
        const marker = /^\/\/ ((?:node_modules|src|db|schemas)\/\S+)$/.exec(text)
        if (marker?.[1]) modules.push({ line, path: marker[1] })
      })
  } catch {
    // not a readable file: its frames keep their own URL
  }
  bundleModules.set(url, modules)
  return modules
}

/** The module a frame's code comes from: its own URL, or for a frame in the bundle the bundled module's path. */
function sourceOf(url: string, lineNumber: number): string {
  if (!/\/dist\/[^/]+\.js$/.test(url)) return url
  let source = url
  for (const module of modulesOfBundle(url)) {
    if (module.line > lineNumber) break
    source = module.path
  }
  return source
}

const shortUrl = (url: string): string => url.replace(/^file:\/\/.*?\/(node_modules|dist|src)\//, '$1/')

function ranked(totals: Map<string, number>, busyMs: number, top: number): SelfTime[] {
  return [...totals.entries()]
    .map(([name, ms]) => ({ name, ms, percent: (100 * ms) / busyMs }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, top)
}

/** Self time per function and per origin from a .cpuprofile file. */
export function summariseProfile(file: string, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]))
  const byFunction = new Map<string, number>()
  const byOrigin = new Map<string, number>()
  let idleMs = 0
  let busyMs = 0
  profile.samples.forEach((nodeId, index) => {
    const ms = (profile.timeDeltas[index] ?? 0) / 1000
    const frame = frames.get(nodeId)
    if (!frame) return
    if (frame.functionName === '(idle)') {
      idleMs += ms
      return
    }
    busyMs += ms
    const source = sourceOf(frame.url, frame.lineNumber)
    const where = source === frame.url ? '' : ` ${source}`
    const name = `${frame.functionName || '(anonymous)'}${where} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms)
    const origin = originOf(source, frame.functionName)
    byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + ms)
  })
  return { busyMs, idleMs, topFunctions: ranked(byFunction, busyMs, top), byOrigin: ranked(byOrigin, busyMs, top) }
}
