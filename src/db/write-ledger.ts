import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * What one request's statements may have changed, as the pool's connections saw them, so that an
 * early answer (HANDLER_TIMEOUT, a statement timer, a lost connection) tells the truth about it:
 * - `'none'`: nothing the request sent can have committed: no COMMIT and no write outside a
 *   transaction was sent, or each was refused by the server;
 * - `'maybe'`: a COMMIT or a write outside a transaction was sent and did not come back refused:
 *   done, in flight, or lost with its connection.
 * `abandon()` (the request was answered without waiting for it) ends every transaction of the request
 * whose COMMIT was not sent, by closing its connection, so that none commits after the answer; and
 * any later statement of the request is refused. Only the service's pool (src/db/pool.ts) keeps a
 * ledger; on the embedded database the outcome stays `'none'`, which claims nothing.
 */
export class WriteLedger {
  /** COMMITs and writes outside a transaction sent, not (yet) refused by the server. */
  private mayHaveCommitted = 0
  /** How to close each connection of this request that is in a transaction whose COMMIT was not sent. */
  private readonly openTransactions = new Set<(reason: Error) => void>()
  /** Why the request was answered without waiting (set by `abandon`). */
  abandoned: Error | undefined
  /** Whose turn it waits in when every connection is taken (src/db/fair-gate.ts): its principal or address, once known. */
  caller: string | undefined

  get outcome(): 'none' | 'maybe' {
    return this.mayHaveCommitted > 0 ? 'maybe' : 'none'
  }

  /** A statement that may commit (COMMIT, or a write outside a transaction) is about to be sent. */
  commitSent(): void {
    this.mayHaveCommitted += 1
  }

  /** The server refused it: nothing committed from it. */
  commitRefused(): void {
    this.mayHaveCommitted -= 1
  }

  /** A transaction opened on a connection; `close` ends it without a COMMIT. Returns what leaves it. */
  transactionOpened(close: (reason: Error) => void): () => void {
    this.openTransactions.add(close)
    return () => this.openTransactions.delete(close)
  }

  /**
   * The request is answered without waiting for its statements: its transactions not committing
   * are closed (the server rolls them back) and its later statements refused. Returns the outcome
   * the answer may state, which nothing the request does afterwards can change.
   */
  abandon(reason: Error): 'none' | 'maybe' {
    this.abandoned ??= reason
    for (const close of this.openTransactions) close(reason)
    this.openTransactions.clear()
    return this.outcome
  }
}

const ledgers = new AsyncLocalStorage<WriteLedger>()

/** Runs `work` (and everything it starts) with `ledger` as the ledger of its statements. */
export function withWriteLedger<T>(ledger: WriteLedger, work: () => T): T {
  return ledgers.run(ledger, work)
}

/** The ledger of the request whose work is running, if any (read by the pool at each checkout). */
export function currentWriteLedger(): WriteLedger | undefined {
  return ledgers.getStore()
}
