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

/** The one line for a port another process holds (the service's or the metrics'), naming the fix; `command` restarts it. */
export function portInUse(error: unknown, ports: { port: number; metricsPort: number | undefined }, command = 'npm start'): string | undefined {
  if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') return undefined
  const port = (error as { port?: number }).port ?? ports.port
  if (port === ports.metricsPort && port !== ports.port) {
    return `metrics port ${port} is in use by another process: stop it, or set METRICS_PORT to another port (0: no metrics)`
  }
  return `port ${port} is in use by another process (another \`${command}\`?): stop it, or start on another port: PORT=${port + 1} ${command}`
}
