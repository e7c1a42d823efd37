import { createHash, randomBytes } from 'node:crypto'
import { closeSync, existsSync, linkSync, openSync, readFileSync, readlinkSync, statSync, unlinkSync, writeSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * One process per embedded database folder: PGlite takes no lock of its own, so two processes on
 * one folder both start and drift apart (each keeps its own copy in memory). The holder is named in
 * `<folder>.lock` beside it (inside, it would be a file PostgreSQL does not expect).
 *
 * - Taken atomically: the lock is hard-linked into place from a file written whole beforehand, which
 *   fails if any lock is there (and a reader never sees a half-written one).
 * - The holder is its pid, its start time (/proc/<pid>/stat) and a random token: a pid now used by
 *   another process (after a reboot, or pid 1 in a new container) does not hold the lock.
 * - A stale lock is removed by one process only: the one that creates the claim named after that
 *   lock's content, and only while the lock still has that content. Every other contender sees the
 *   claim, or the lock gone or changed, and looks again; none ever removes a live lock.
 */
export class DataDirInUse extends Error {
  override name = 'DataDirInUse'
  constructor(
    readonly dataDir: string,
    readonly holderPid: number,
  ) {
    super(
      `the embedded database in ${dataDir} is in use by process ${holderPid}: stop that process, ` +
        'or set PGLITE_DIR to another folder (or DATABASE_URL to a PostgreSQL server)',
    )
  }
}

const HAS_PROC = existsSync('/proc/self/stat')

/** A process's start time in clock ticks after boot, or undefined when it is gone or not readable. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' // alive, another user's
  }
}

/** This process as its locks name it: `<pid> <start time or -> <token>`, unique to this process's life. */
const SELF = `${process.pid} ${(HAS_PROC && startTimeOf(process.pid)) || '-'} ${randomBytes(8).toString('hex')}`

/** Whether the process a lock's (or a claim's) content names is alive and is the one that wrote it. */
function isHeld(content: string): boolean {
  const [pidText = '', start] = content.trim().split(/\s+/)
  const pid = Number(pidText)
  if (!/^[0-9]+$/.test(pidText) || pid <= 0) return false
  if (!HAS_PROC) return isRunning(pid)
  const running = startTimeOf(pid)
  if (running === undefined) return isRunning(pid) // gone, or hidden from us (hidepid): ask the kernel
  if (start !== undefined && start !== '-') return running === start
  // The lock's first version named the pid alone: only this service's process can be its holder.
  try {
    return isThisService(pid)
  } catch {
    return true
  }
}

/** The folder of the service's package.json, above this module (src/db/ or the bundle's dist/). */
function packageRoot(): string | undefined {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir
    if (path.dirname(dir) === dir) return undefined
  }
}

const isFile = (file: string): boolean => statSync(file, { throwIfNoEntry: false })?.isFile() ?? false

/**
 * Whether `pid` runs this service: a Node.js process with a script of this package (outside its
 * node_modules) on its command line, relative paths read from its working directory. Another
 * program, or `node` running something else, that took a recycled pid holds no lock of ours.
 */
function isThisService(pid: number): boolean {
  const [program = '', ...args] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
  if (!path.basename(program).startsWith('node')) return false
  const root = packageRoot()
  if (root === undefined) return true // nothing to compare with: any Node.js process may be ours
  const cwd = readlinkSync(`/proc/${pid}/cwd`)
  return args.some((arg) => {
    const file = path.resolve(cwd, arg)
    const inside = path.relative(root, file)
    return !inside.startsWith('..') && !path.isAbsolute(inside) && !inside.split(path.sep).includes('node_modules') && isFile(file)
  })
}

function contentOf(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/** Creates `file` as a link to `draft`, or returns false when a file is there. */
function linkExclusive(draft: string, file: string): boolean {
  try {
    linkSync(draft, file)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
}

const pause = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/**
 * Removes `file` if it still has the content `stale`, whose writer is gone. Exactly one process
 * can: the one that creates the claim `<file>.takeover-<hash of stale>`. A claim left by a process
 * that died while taking over is stale in turn, and removed the same way.
 */
function removeStale(file: string, stale: string, draft: string): void {
  const claim = `${file}.takeover-${createHash('sha256').update(stale).digest('hex').slice(0, 16)}`
  if (!linkExclusive(draft, claim)) {
    const claimer = contentOf(claim)
    if (claimer === undefined) return // just released: look again
    if (isHeld(claimer)) return pause(1) // another process is taking over: let it finish
    return removeStale(claim, claimer, draft)
  }
  try {
    // Only a claim holder removes this content, and it is unique: still there, it is still stale.
    if (contentOf(file) === stale) unlinkSync(file)
  } finally {
    unlinkSync(claim)
  }
}

/** Takes the lock of `dataDir` for this process (released at exit), or throws DataDirInUse. */
export function lockDataDir(dataDir: string): void {
  const lockFile = `${path.resolve(dataDir)}.lock`
  const draft = `${lockFile}.${process.pid}.${randomBytes(4).toString('hex')}`
  const fd = openSync(draft, 'wx')
  writeSync(fd, `${SELF}\n`)
  closeSync(fd)
  const mine = `${SELF}\n`
  try {
    for (let attempt = 0; !linkExclusive(draft, lockFile); attempt++) {
      // Each turn either takes the lock, finds a live holder, or sees another contender's progress.
      if (attempt > 5_000) throw new Error(`cannot take the lock ${lockFile}: it keeps changing; try again`)
      const content = contentOf(lockFile)
      if (content === undefined || content === mine) {
        if (content === mine) return // already this process's
        continue
      }
      if (isHeld(content)) throw new DataDirInUse(dataDir, Number(content.trim().split(/\s+/)[0]))
      removeStale(lockFile, content, draft)
    }
  } finally {
    unlinkSync(draft)
  }
  process.once('exit', () => {
    try {
      if (contentOf(lockFile) === mine) unlinkSync(lockFile)
    } catch {
      // already gone
    }
  })
}
