import { closeSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import path from 'node:path'

/**
 * One process per embedded database folder: PGlite takes no lock of its own, so two processes on
 * one folder both start and drift apart (each keeps its own copy in memory). The holder's pid is
 * kept in `<folder>.lock` beside it (inside, it would be a file PostgreSQL does not expect); a lock
 * whose process is gone (killed, the machine restarted) is taken over.
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

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' // alive, another user's
  }
}

const holderOf = (lockFile: string): number => Number.parseInt(readFileSync(lockFile, 'utf8'), 10)

/** Takes the lock of `dataDir` for this process (released at exit), or throws DataDirInUse. */
export function lockDataDir(dataDir: string): void {
  const lockFile = `${path.resolve(dataDir)}.lock`
  // Written whole to a file of its own, then linked into place: a reader never sees it half written.
  const draft = `${lockFile}.${process.pid}`
  const fd = openSync(draft, 'w')
  writeSync(fd, `${process.pid}\n`)
  closeSync(fd)
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(draft, lockFile)
        break
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error
        const holder = holderOf(lockFile)
        // The same pid is a lock left by an earlier life of this process' pid (pid 1 in a container).
        if (holder !== process.pid && Number.isInteger(holder) && isRunning(holder)) throw new DataDirInUse(dataDir, holder)
        unlinkSync(lockFile)
      }
    }
  } finally {
    unlinkSync(draft)
  }
  process.once('exit', () => {
    try {
      if (holderOf(lockFile) === process.pid) unlinkSync(lockFile)
    } catch {
      // already gone
    }
  })
}
