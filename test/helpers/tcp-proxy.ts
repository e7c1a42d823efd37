import { createServer, connect, type Server, type Socket } from 'node:net'

/**
 * A TCP proxy in front of the real PostgreSQL that a test can cut and restore, to take the
 * database away from the service without stopping the server other workers use.
 */
export class CuttableProxy {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  port = 0

  constructor(private readonly targetHost: string, private readonly targetPort: number) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost)
      for (const socket of [client, upstream]) {
        this.sockets.add(socket)
        socket.on('close', () => this.sockets.delete(socket))
        socket.on('error', () => socket.destroy())
      }
      client.pipe(upstream).pipe(client)
      client.on('close', () => upstream.destroy())
      upstream.on('close', () => client.destroy())
    })
    await new Promise<void>((resolve) => this.server?.listen(this.port, '127.0.0.1', resolve))
    const address = this.server.address()
    if (address && typeof address === 'object') this.port = address.port
  }

  /** Refuses new connections and drops the open ones, as a database that went away. */
  async cut(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  }

  async restore(): Promise<void> {
    await this.start()
  }
}
