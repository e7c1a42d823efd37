import { connect, createServer } from 'node:net'
import { scaled } from './slowness.js'

// The OS may hand a closed port out again at once: a port given here is never given twice in a
// worker, or two servers of one test (their ports taken back to back) could be told the same one.
const handedOut = new Set<number>()

/** A port nothing listens on now, and one this worker has not handed out before. */
export async function freePort(): Promise<number> {
  for (;;) {
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    if (!address || typeof address !== 'object') throw new Error('no port')
    if (handedOut.has(address.port)) continue
    handedOut.add(address.port)
    return address.port
  }
}

/** Waits until something accepts connections on the port, or fails when `exited` settles first. */
export async function waitForPort(port: number, exited: Promise<unknown>, output: () => string, timeoutMs = 15_000): Promise<void> {
  let gone = false
  void exited.then(() => (gone = true))
  const bound = scaled(timeoutMs)
  const deadline = Date.now() + bound
  while (Date.now() < deadline) {
    if (gone) throw new Error(`exited before listening on ${port}:\n${output()}`)
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`nothing listens on ${port} after ${bound} ms:\n${output()}`)
}
