import { readdirSync, readFileSync } from 'node:fs'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { resetDatabase, testDatabase } from '../helpers/database.js'
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js'

/** The nice value of each thread of a process, by thread id (Linux: field 19 of /proc/<pid>/task/<tid>/stat). */
function threadNiceness(pid: number): Map<number, number> {
  const niceness = new Map<number, number>()
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const afterName = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8').split(') ')[1] ?? ''
    niceness.set(Number(task), Number(afterName.split(' ')[16]))
  }
  return niceness
}

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (condition()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return condition()
}

describe.runIf(process.platform === 'linux')('helper thread priority (HELPER_THREAD_NICENESS)', () => {
  let server: ServerProcess | undefined

  beforeEach(async () => {
    await testDatabase()
    await resetDatabase()
  })
  afterEach(async () => {
    await server?.cleanup()
  })

  it('lowers every thread but the event loop\'s once the service listens', async () => {
    server = await startServerProcess({ HELPER_THREAD_NICENESS: '7' })
    const pid = server.child.pid ?? 0
    const helpersLowered = () => [...threadNiceness(pid)].every(([thread, nice]) => (thread === pid ? nice === 0 : nice === 7))
    expect(await waitFor(helpersLowered)).toBe(true)
    expect(threadNiceness(pid).size).toBeGreaterThan(4) // libuv's pool and V8's helpers are there
  })

  it('leaves them alone with 0', async () => {
    server = await startServerProcess({ HELPER_THREAD_NICENESS: '0' })
    const pid = server.child.pid ?? 0
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect([...threadNiceness(pid).values()].every((nice) => nice === 0)).toBe(true)
  })
})
