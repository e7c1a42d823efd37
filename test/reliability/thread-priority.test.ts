import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { useServerProcesses } from '../helpers/server-process.js'
import { scaled } from '../helpers/slowness.js'

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
  const deadline = Date.now() + scaled(timeoutMs)
  while (Date.now() < deadline) {
    if (condition()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return condition()
}

describe.runIf(process.platform === 'linux')('helper thread priority (HELPER_THREAD_NICENESS)', () => {
  const processes = useServerProcesses()

  it("lowers every thread but the event loop's once the service listens", async () => {
    const server = await processes.start({ HELPER_THREAD_NICENESS: '7' })
    const pid = server.child.pid ?? 0
    const helpersLowered = () => [...threadNiceness(pid)].every(([thread, nice]) => (thread === pid ? nice === 0 : nice === 7))
    expect(await waitFor(helpersLowered)).toBe(true)
    expect(threadNiceness(pid).size).toBeGreaterThan(4) // libuv's pool and V8's helpers are there
  })

  it('leaves them alone with 0', async () => {
    const server = await processes.start({ HELPER_THREAD_NICENESS: '0' })
    const pid = server.child.pid ?? 0
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect([...threadNiceness(pid).values()].every((nice) => nice === 0)).toBe(true)
  })
})
