import { CuttableProxy, type Pair } from './tcp-proxy.js'

/**
 * What happens to the next COMMIT: its answer lost on the way back (the server committed); the
 * COMMIT itself lost (the server rolls back when its client goes); the COMMIT lost while the server
 * keeps the connection a while longer (it has not noticed its client went: the transaction, and
 * its locks, stay until it does, after HELD_MS); or its answer lost and the database unreachable
 * from then on (nobody can say what happened until it is back).
 */
export type CommitFault = 'lose-answer' | 'drop-commit' | 'drop-commit-held' | 'lose-answer-then-cut'

/** How long the server keeps a connection whose client went with 'drop-commit-held'. */
export const HELD_MS = 1_500

/** The simple-protocol Query message Kysely's driver sends to commit: 'Q', its length (11), `commit\0`. */
const COMMIT_MESSAGE = Buffer.from('Q\0\0\0\x0bcommit\0', 'latin1')

/**
 * A TCP proxy in front of the real PostgreSQL that loses one COMMIT, or its answer, on purpose:
 * the one place where a client cannot know whether its transaction committed.
 */
export class CommitProxy extends CuttableProxy {
  private fault: CommitFault | undefined

  /** The next COMMIT that passes meets `fault`. */
  arm(fault: CommitFault): void {
    this.fault = fault
  }

  get armed(): boolean {
    return this.fault !== undefined
  }

  protected override forward({ client, upstream }: Pair): void {
    let answerLost = false
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
      if (fault === 'drop-commit-held') {
        // The client's end goes now, the server's later: its transaction stays open meanwhile.
        client.removeAllListeners('close')
        client.destroy()
        setTimeout(() => upstream.destroy(), HELD_MS)
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
}
