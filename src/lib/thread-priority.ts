import { pbkdf2 } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { setPriority } from 'node:os'
import { promisify } from 'node:util'

/** Any small job for libuv's thread pool, which starts its threads on first use. */
const useThreadPool = () => promisify(pbkdf2)('', '', 1, 1, 'sha256')

/**
 * Lowers the scheduling priority of every thread of this process but the main one: libuv's pool,
 * where argon2 hashes passwords, and V8's helpers. Under a burst of logins the hashing threads then
 * give way to the event loop, so reads keep their latency (issue 6), while logins still get every
 * cycle nobody else wants. Linux only, where each thread has its own nice value (Node 20 names all
 * its threads `node`, so the pool's cannot be told apart); raising a nice value needs no privilege.
 * Returns how many threads were lowered.
 */
export async function lowerHelperThreadPriority(niceness: number): Promise<number> {
  if (process.platform !== 'linux' || niceness <= 0) return 0
  await useThreadPool()
  let lowered = 0
  for (const task of readdirSync('/proc/self/task')) {
    const threadId = Number(task)
    if (threadId === process.pid) continue
    try {
      setPriority(threadId, niceness)
      lowered += 1
    } catch {
      // The thread ended in the meantime.
    }
  }
  return lowered
}
