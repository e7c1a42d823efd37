import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

/** Every child this run started; all of them are stopped at the end, on errors and on Ctrl-C. */
const children = new Set<ChildProcess>()

export interface SpawnOptions {
  /** Arguments to node itself (e.g. `--import tsx`, `--cpu-prof`). */
  nodeArgs?: string[]
  script: string
  env: NodeJS.ProcessEnv
  /** stdout and stderr go to this file (the service logs to stdout); else they are discarded. */
  logFile?: string
  cwd: string
}

export function spawnNode(options: SpawnOptions): ChildProcess {
  const output = options.logFile ? openSync(options.logFile, 'a') : 'ignore'
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.script], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', output, output],
  })
  if (typeof output === 'number') closeSync(output)
  children.add(child)
  child.once('exit', () => children.delete(child))
  return child
}

const exited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null

/** SIGTERM (the service shuts down gracefully and writes its CPU profile), SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (exited(child)) return
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await done
  clearTimeout(timer)
}

export async function stopAllChildren(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child)))
}

let cleanupInstalled = false

/** Ctrl-C or a crash of the runner must not leave servers behind; `atExit` runs too (e.g. removes temporary files). */
export function installCleanup(atExit: () => void = () => undefined): void {
  if (cleanupInstalled) return
  cleanupInstalled = true
  process.on('exit', () => {
    for (const child of children) if (!exited(child)) child.kill('SIGKILL')
    atExit()
  })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping the child processes\n`)
      void stopAllChildren().finally(() => process.exit(130))
    })
  }
}

/** A free loopback port (the small race between closing and reusing it is acceptable here). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

const canConnect = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })

async function isReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1_000) })
    await response.arrayBuffer()
    return response.ok
  } catch {
    return false
  }
}

/** Polls every `intervalMs` until `probe` holds; throws after `timeoutMs` or when the child exits. */
async function pollUntil(child: ChildProcess, what: string, probe: () => Promise<boolean>, timeoutMs: number, intervalMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (exited(child)) throw new Error(`${what}: the process exited (code ${child.exitCode}, signal ${child.signalCode})`)
    if (await probe()) return
    await sleep(intervalMs)
  }
  throw new Error(`${what}: not reached within ${timeoutMs} ms`)
}

export interface StartTimes {
  /** From spawn to the port accepting connections. */
  listeningMs: number
  /** From spawn to the first `200` of the readiness URL. */
  readyMs: number
}

/** Waits for a spawned server: first the open port, then a successful readiness request. */
export async function waitForServer(
  child: ChildProcess,
  port: number,
  readyPath: string,
  spawnedAt: number,
  timeoutMs = 60_000,
): Promise<StartTimes> {
  await pollUntil(child, `port ${port}`, () => canConnect(port), timeoutMs)
  const listeningMs = performance.now() - spawnedAt
  await pollUntil(child, `GET ${readyPath}`, () => isReady(`http://127.0.0.1:${port}${readyPath}`), timeoutMs)
  return { listeningMs, readyMs: performance.now() - spawnedAt }
}

/** Resident set size of a process, in MiB (VmRSS of /proc/<pid>/status); undefined once it is gone. */
export function rssMiB(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : undefined
  } catch {
    return undefined
  }
}

const CLOCK_TICKS_PER_SECOND = 100

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th fields.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND
  } catch {
    return undefined
  }
}

/** Busy and total jiffies of the whole machine (first line of /proc/stat). */
export function machineJiffies(): { busy: number; total: number } {
  const values = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = values.reduce((sum, value) => sum + value, 0)
  const idle = (values[3] ?? 0) + (values[4] ?? 0)
  return { busy: total - idle, total }
}

/** The machine's CPU use over `ms`, in percent of all cores: shows load from other processes. */
export async function machineBusyPercent(ms: number): Promise<number> {
  const before = machineJiffies()
  await sleep(ms)
  const after = machineJiffies()
  return (100 * (after.busy - before.busy)) / Math.max(1, after.total - before.total)
}

/**
 * CPU seconds so far of each PostgreSQL backend serving `database` (its process title reads
 * `postgres: <cluster>: <user> <database> <address> …`), so that other databases' work is not counted.
 */
export function postgresBackendsCpu(database: string): Map<number, number> {
  const backends = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ')
      if (!title.startsWith('postgres:') || !title.split(/\s+/).includes(database)) continue
      const seconds = cpuSeconds(Number(entry))
      if (seconds !== undefined) backends.set(Number(entry), seconds)
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return backends
}

export interface ResourceSamples {
  /** RSS samples in MiB, in time order. */
  rss: number[]
  /** The process's CPU use over the run, in percent of one core. */
  cpuPercent: number
  /** PostgreSQL backends of the bench database, in percent of one core. */
  postgresPercent: number
  /** This runner (the load generator), in percent of one core. */
  runnerPercent: number
  /** The whole machine's CPU use over the run, in percent of all cores. */
  machinePercent: number
}

/** Samples a process's RSS every `intervalMs` and its CPU time over the whole span. */
export class ResourceSampler {
  private readonly rss: number[] = []
  private readonly timer: NodeJS.Timeout
  private readonly startedAt = performance.now()
  private readonly cpuAtStart: number
  private readonly machineAtStart = machineJiffies()
  private readonly runnerAtStart = process.cpuUsage()
  private readonly postgresAtStart: Map<number, number>

  constructor(
    private readonly pid: number,
    private readonly database: string,
    intervalMs = 250,
  ) {
    this.cpuAtStart = cpuSeconds(pid) ?? 0
    this.postgresAtStart = postgresBackendsCpu(database)
    this.sample()
    this.timer = setInterval(() => this.sample(), intervalMs)
  }

  private sample(): void {
    const value = rssMiB(this.pid)
    if (value !== undefined) this.rss.push(value)
  }

  /** The latest RSS sample so far, in MiB. */
  current(): number | undefined {
    return this.rss.at(-1)
  }

  stop(): ResourceSamples {
    clearInterval(this.timer)
    this.sample()
    const seconds = (performance.now() - this.startedAt) / 1000
    const cpu = (cpuSeconds(this.pid) ?? this.cpuAtStart) - this.cpuAtStart
    const machine = machineJiffies()
    const machinePercent = (100 * (machine.busy - this.machineAtStart.busy)) / Math.max(1, machine.total - this.machineAtStart.total)
    let postgres = 0
    for (const [pid, total] of postgresBackendsCpu(this.database)) postgres += total - (this.postgresAtStart.get(pid) ?? 0)
    const runner = process.cpuUsage(this.runnerAtStart)
    const percent = (cpuSeconds: number) => (100 * cpuSeconds) / Math.max(seconds, 0.001)
    return {
      rss: [...this.rss],
      cpuPercent: percent(cpu),
      postgresPercent: percent(postgres),
      runnerPercent: percent((runner.user + runner.system) / 1e6),
      machinePercent,
    }
  }
}

/** Runs a node script to completion and returns its stdout (a floor measurement prints JSON). */
export function runNodeForOutput(options: Omit<SpawnOptions, 'logFile'>, timeoutMs: number): Promise<string> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.script], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)))
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      children.delete(child)
      if (code === 0) resolve(stdout)
      else reject(new Error(`${options.script} failed (code ${code}, signal ${signal}): ${stderr}`))
    })
  })
}
