import { connect, createServer, type Server, type Socket } from 'node:net'

/**
 * What happens to the next COMMIT: its answer lost on the way back (the server committed); the
 * COMMIT itself lost (the server rolls back when its client goes); or its answer lost and the
 * database unreachable from then on (nobody can say what happened until it is back).
 */
export type CommitFault = 'lose-answer' | 'drop-commit' | 'lose-answer-then-cut'

/** The simple-protocol Query message Kysely's driver sends to commit: 'Q', its length (11), `commit\0`. */
const COMMIT_MESSAGE = Buffer.from('Q\0\0\0\x0bcommit\0', 'latin1')

/**
 * A TCP proxy in front of the real PostgreSQL that loses one COMMIT, or its answer, on purpose:
 * the one place where a client cannot know whether its transaction committed.
 */
export class CommitProxy {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  private fault: CommitFault | undefined
  port = 0

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** The next COMMIT that passes meets `fault`. */
  arm(fault: CommitFault): void {
    this.fault = fault
  }

  get armed(): boolean {
    return this.fault !== undefined
  }

  async start(): Promise<void> {
    this.server = createServer((client) => this.connectPair(client))
    await new Promise<void>((resolve) => this.server?.listen(this.port, '127.0.0.1', resolve))
    const address = this.server.address()
    if (address && typeof address === 'object') this.port = address.port
  }

  private connectPair(client: Socket): void {
    const upstream = connect(this.targetPort, this.targetHost)
    let answerLost = false
    for (const socket of [client, upstream]) {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
      socket.on('error', () => socket.destroy())
    }
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    client.on('data', (chunk: Buffer) => {
      const fault = this.fault
      if (fault === undefined || !chunk.includes(COMMIT_MESSAGE)) {
        upstream.write(chunk)
        return
      }
      this.fault = undefined
      if (fault === 'drop-commit') {
        client.destroy()
        return
      }
      answerLost = true
      // Once the server answered (it committed), the answer goes nowhere.
      upstream.once('data', () => {
        if (fault === 'lose-answer-then-cut') void this.cut()
        else client.destroy()
      })
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (!answerLost) client.write(chunk)
    })
  }

  /** Refuses new connections and drops the open ones. */
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
