import { createServer } from 'node:net'

/**
 * Binds each port for a moment and lets it go: rejects with the listen error (EADDRINUSE, EACCES…,
 * carrying its `port`) of the first one that cannot be bound. The service checks its ports this
 * way before opening the database, so that a busy one is named at once, not after a long start.
 */
export async function checkPortsBindable(targets: readonly { port: number | undefined; host: string }[]): Promise<void> {
  for (const { port, host } of targets) {
    if (!port) continue // none, or any free port
    const probe = createServer()
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject)
      probe.listen(port, host, () => probe.close(() => resolve()))
    })
  }
}
