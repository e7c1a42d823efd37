import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { freePort } from './ports.js'
import { scaled } from './slowness.js'

/** Debian's package (`apt-get install prometheus`; .ci/run installs it), promtool included. */
export const PROMETHEUS = 'prometheus'
export const prometheusAvailable = (): boolean => spawnSync(PROMETHEUS, ['--version']).status === 0

export const RULES = 'deploy/prometheus/alerts.yml'

export interface PrometheusRun {
  child: ChildProcess
  url: string
  dir: string
  output: string[]
  /** A query's `data`, or undefined when Prometheus does not answer (yet) or refuses it. */
  query<T>(pathAndQuery: string): Promise<T | undefined>
  /** Polls `check` until it gives a value; fails when Prometheus exits or after `timeoutMs`. */
  until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs?: number): Promise<T>
  stop(): Promise<void>
}

export interface ActiveAlert {
  labels: Record<string, string>
  annotations: Record<string, string>
  state: 'pending' | 'firing'
  activeAt: string
}

export type Vector = { result: { metric: Record<string, string>; value: [number, string] }[] }

/**
 * A new Prometheus (empty storage) scraping `targets` (job receivables-api, as compose's) every
 * `interval`, evaluating `ruleFile` (the real alerts.yml unless told) as often, with `externalLabels`.
 */
export async function startPrometheus(options: {
  targets: string[]
  ruleFile?: string
  interval?: string
  externalLabels?: Record<string, string>
}): Promise<PrometheusRun> {
  const dir = await mkdtemp(path.join(tmpdir(), 'receivables-prometheus-'))
  const interval = options.interval ?? '1s'
  const config = {
    global: {
      scrape_interval: interval,
      scrape_timeout: interval,
      evaluation_interval: interval,
      ...(options.externalLabels ? { external_labels: options.externalLabels } : {}),
    },
    rule_files: [path.resolve(options.ruleFile ?? RULES)],
    scrape_configs: [{ job_name: 'receivables-api', static_configs: [{ targets: options.targets }] }],
  }
  // JSON is YAML.
  await writeFile(path.join(dir, 'prometheus.yml'), `${JSON.stringify(config, null, 2)}\n`)
  const port = await freePort()
  const child = spawn(
    PROMETHEUS,
    [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const output: string[] = []
  child.stdout?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  child.stderr?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  const url = `http://127.0.0.1:${port}`
  const run: PrometheusRun = {
    child,
    url,
    dir,
    output,
    async query<T>(pathAndQuery: string) {
      try {
        const response = await fetch(`${url}${pathAndQuery}`)
        if (!response.ok) return undefined
        return ((await response.json()) as { data: T }).data
      } catch {
        return undefined // not listening yet
      }
    },
    async until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000) {
      const deadline = Date.now() + scaled(timeoutMs)
      for (;;) {
        const value = await check()
        if (value !== undefined) return value
        if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}):\n${output.join('')}`)
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output.join('').slice(-2000)}`)
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
      await rm(dir, { recursive: true, force: true })
    },
  }
  return run
}

/** An instant query's result, empty when there is none (yet). */
export async function instant(prometheus: PrometheusRun, expr: string): Promise<Vector['result']> {
  return (await prometheus.query<Vector>(`/api/v1/query?query=${encodeURIComponent(expr)}`))?.result ?? []
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 }
const DURATION = /(?:\d+(?:ms|s|m|h|d|w|y))+/

function durationMs(text: string): number {
  let total = 0
  for (const [, amount, unit] of text.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)) total += Number(amount) * UNIT_MS[unit!]!
  return total
}

/**
 * The rule file's text with every duration of its rules (range selectors, `offset`, `for:`) divided
 * by `factor`: the same rules on a clock `factor` times faster, so that a test sees in seconds what
 * takes hours. Thresholds (ratios, requests a second) are left as they are. Derived from the real
 * file, never written apart from it; fails if a duration is in a place it does not know.
 */
export function acceleratedRules(text: string, factor: number): string {
  const scale = (duration: string) => `${Math.max(1, Math.round(durationMs(duration) / factor))}ms`
  let replaced = 0
  const out = text
    .split('\n')
    .map((line) => {
      if (/^\s*#/.test(line)) return line
      return line
        .replace(new RegExp(`\\[(${DURATION.source})\\]`, 'g'), (_, duration: string) => (replaced++, `[${scale(duration)}]`))
        .replace(new RegExp(`\\boffset (${DURATION.source})`, 'g'), (_, duration: string) => (replaced++, `offset ${scale(duration)}`))
        .replace(
          new RegExp(`^(\\s*for: )(${DURATION.source})\\s*$`),
          (_, head: string, duration: string) => (replaced++, `${head}${scale(duration)}`),
        )
    })
    .join('\n')
  const leftOver = out
    .split('\n')
    .filter((line) => !/^\s*#/.test(line) && !/(summary|description|runbook_url):/.test(line))
    .filter((line) => new RegExp(`(?<![\\w.])${DURATION.source}(?![\\w])`).test(line.replace(/\d+ms/g, '')))
  if (replaced === 0 || leftOver.length > 0) throw new Error(`durations not scaled: ${leftOver.join('\n') || 'none found'}`)
  return out
}

/** acceleratedRules of the real alerts.yml, written to `dir`; returns its path. */
export async function writeAcceleratedRules(dir: string, factor: number): Promise<string> {
  const file = path.join(dir, 'alerts.accelerated.yml')
  await writeFile(file, acceleratedRules(await readFile(RULES, 'utf8'), factor))
  return file
}
