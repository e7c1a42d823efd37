import { setTimeout as sleep } from 'node:timers/promises'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/types.js'
import { findSettledKey, type KeyName, type KeyRow } from './repository.js'

/** What became of a keyed request's transaction whose COMMIT got no answer. */
export type CommitOutcome =
  /** Its key's row is there: the work committed with it (or, after it, another request's with the same key). */
  | { kind: 'committed'; row: KeyRow }
  /** No row, and no transaction holds the key: nothing was committed. */
  | { kind: 'not_committed' }
  /** The database cannot be asked, or the transaction still holds the key on a server that lost its client. */
  | { kind: 'unknown' }

/** Looks while the server has not yet noticed that its client went (it then ends the transaction). */
const LOOKS = 3
const BETWEEN_LOOKS_MS = 100

/**
 * The truth about a COMMIT whose connection was lost before its answer (the commit may or may not
 * have happened): the key's row, read on another connection once no transaction holds the key's
 * lock. Never throws: a database that cannot be asked is `unknown`.
 */
export async function outcomeOfLostCommit(db: Kysely<Database>, name: KeyName): Promise<CommitOutcome> {
  try {
    for (let look = 1; ; look++) {
      const settled = await findSettledKey(db, name)
      if (!settled.held) return settled.row ? { kind: 'committed', row: settled.row } : { kind: 'not_committed' }
      if (look === LOOKS) return { kind: 'unknown' }
      await sleep(BETWEEN_LOOKS_MS)
    }
  } catch {
    return { kind: 'unknown' }
  }
}
