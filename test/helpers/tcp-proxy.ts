import { createServer, connect, type Server, type Socket } from 'node:net'

export interface Pair {
  client: Socket
  upstream: Socket
}

/**
 * A TCP proxy in front of the real PostgreSQL that a test can cut and restore, to take the
 * database away from the service without stopping the server other workers use, or stall: keep
 * every connection open (and accept new ones) but forward nothing, as a database or network that
 * hangs.
 */
export class CuttableProxy {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  private readonly pairs = new Set<Pair>()
  private stalled = false
  port = 0

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost)
      const pair = { client, upstream }
      this.pairs.add(pair)
      for (const socket of [client, upstream]) {
        this.sockets.add(socket)
        socket.on('close', () => {
          this.sockets.delete(socket)
          this.pairs.delete(pair)
        })
        socket.on('error', () => socket.destroy())
      }
      if (!this.stalled) this.forward(pair)
      client.on('close', () => upstream.destroy())
      upstream.on('close', () => client.destroy())
    })
    await new Promise<void>((resolve) => this.server?.listen(this.port, '127.0.0.1', resolve))
    const address = this.server.address()
    if (address && typeof address === 'object') this.port = address.port
  }

  /** Carries the bytes both ways; a subclass may look at them on the way. */
  protected forward({ client, upstream }: Pair): void {
    client.pipe(upstream)
    upstream.pipe(client)
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

  /** Forwards nothing more, either way, on open and new connections; nothing is closed. */
  stall(): void {
    this.stalled = true
    for (const { client, upstream } of this.pairs) {
      client.unpipe(upstream)
      upstream.unpipe(client)
      client.pause()
      upstream.pause()
    }
  }

  /** Forwards again, what was held back included. */
  resume(): void {
    this.stalled = false
    for (const pair of this.pairs) this.forward(pair)
  }
}
