import { createHash, randomUUID } from 'node:crypto'
import type { CounterLimit, CounterStore, Reservation, Settlement } from '../../lib/counter-store.js'
import { addressKeys as defaultAddressKeys, type AddressKeys } from '../../lib/client-address.js'
import type { Admission } from '../../lib/concurrency-limit.js'
import type { Familiarity, FamiliarIds, FamiliarPlaces } from './familiar-places.js'
import { throttled } from './throttled.js'
import { Waiters } from './waiters.js'

export interface ThrottleLimits {
  /** Failures per (client address, e-mail). */
  perClient: number
  /** Failures per e-mail from unfamiliar places, and per familiar place of the e-mail apart. */
  perAccount: number
  /** Failures per client address, whatever the e-mail (password spraying, hashing floods). */
  perAddress: number
  windowSeconds: number
  /** How long an attempt waits for the attempts in flight that hold a limit before it is refused. */
  burstWaitMs: number
}

/**
 * How long an attempt may stay in flight: far above a verification, however long the hashing
 * queue; an instance that dies mid-attempt holds its place no longer.
 */
const LEASE_MS = 30_000

/** Keys carry a digest of the e-mail, not the address itself. */
const digest = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32)

/** Why a login was refused: failures in the window, or attempts in flight that did not end in time. */
export type ThrottleReason = 'failures' | 'in_flight'

export const throttleReason = (error: unknown): ThrottleReason | undefined => (error as { throttleReason?: ThrottleReason } | null)?.throttleReason

const throttledFor = (waitMs: number, reason: ThrottleReason): Error => Object.assign(throttled(waitMs), { throttleReason: reason })

/** One attempt's place in flight, taken before its password is checked. */
export interface LoginReservation {
  /** How familiar the source is to the account. */
  readonly familiarity: Familiarity
  /** Its place in the password-hashing queue: familiar addresses, then places, first; fair per network and account. */
  readonly admission: Admission
  /** The password was right: clear the client's failures and give back the place. */
  succeeded(): Promise<void>
  /** The password was checked and refused: the place becomes a failure on every counter. */
  failed(): Promise<void>
  /** The password was never checked (the service was busy or failed): give back the place. */
  cancelled(): Promise<void>
}

/**
 * Limits login attempts per (client address, e-mail), per e-mail and per client address (§2). Each
 * attempt is counted before its password is checked and stays counted when it fails; windows
 * expire, so the rightful owner is never locked out for good.
 *
 * Per e-mail, an address the account logged in from recently (FamiliarPlaces) has a budget of its
 * own, then its place (/24, /64) one of its own, apart from the one all other places share (Entra's
 * smart lockout): guesses from anywhere else, the owner's /24 included, cannot lock the owner out
 * of their usual address, and stay limited per account. Addresses are counted by addressKey (an
 * IPv6 /64 is one subscriber).
 *
 * An attempt that finds a limit held only by attempts in flight waits for them (up to
 * `burstWaitMs`) instead of being refused: once one succeeds and clears the client's failures, the
 * rest are checked in turn, so a burst of correct logins is served; once they have failed, the
 * limit is reached by failures and the wait ends in 429 with the window's real remainder. Waiters
 * are woken by the ends of those attempts on any instance (Waiters), one per place given back.
 */
export class LoginThrottle {
  private readonly waiters: Waiters

  constructor(
    private readonly store: CounterStore,
    private readonly limits: ThrottleLimits,
    private readonly places: FamiliarPlaces,
    private readonly addresses: AddressKeys = defaultAddressKeys(),
  ) {
    this.waiters = new Waiters(store)
  }

  /** The account's counter is the familiar address's own, else the familiar place's, else the strangers'. */
  private keys(clientIp: string, email: string, ids: FamiliarIds | undefined, familiarity: Familiarity) {
    const account = digest(email)
    const address = this.addresses.key(clientIp)
    const accountKey =
      familiarity === 'address'
        ? `familiar-address:${ids!.address}`
        : familiarity === 'place'
          ? `familiar-account:${ids!.place}`
          : `account:${account}`
    return { client: `client:${address}:${account}`, account: accountKey, address: `address:${address}` }
  }

  /**
   * Puts the attempt in flight, waiting for the attempts in flight that hold a limit; throws 429
   * with Retry-After when failures hold one, or when those in flight outlast the wait.
   */
  async reserve(clientIp: string, email: string): Promise<LoginReservation> {
    const ids = this.places.ids(email, clientIp)
    const familiarity = await this.places.familiarity(ids)
    const keys = this.keys(clientIp, email, ids, familiarity)
    const counters = [
      { key: keys.client, limit: this.limits.perClient },
      { key: keys.account, limit: this.limits.perAccount },
      { key: keys.address, limit: this.limits.perAddress },
    ]
    const attempt = randomUUID()
    const deadline = performance.now() + this.limits.burstWaitMs
    // The key this attempt was given a place on, when woken for one.
    let placeOn: string | undefined
    for (;;) {
      const result = await this.look(attempt, counters, placeOn)
      if (result.outcome === 'reserved') return this.reservation(attempt, counters, ids, familiarity, this.admission(clientIp, email, familiarity))
      if (result.outcome === 'blocked') throw throttledFor(result.waitMs, 'failures')
      const remainingMs = deadline - performance.now()
      // They are being checked now: one more attempt gets through in about a second.
      if (remainingMs <= 0) throw throttledFor(1000, 'in_flight')
      const wake = await this.waiters.wait(result.key, result.version, remainingMs)
      placeOn = wake === 'place' ? result.key : undefined
    }
  }

  /** One reserve; a place given to this attempt on `placeOn` that it did not take goes to the next in line there. */
  private async look(attempt: string, counters: CounterLimit[], placeOn: string | undefined): Promise<Reservation> {
    let result: Reservation | undefined
    try {
      result = await this.store.reserve(attempt, counters, LEASE_MS, this.limits.windowSeconds * 1000)
      return result
    } finally {
      // Not taken: busy elsewhere, or the store failed. Failures filling a counter wake all on it.
      const untaken = result === undefined || (result.outcome === 'busy' && result.key !== placeOn)
      if (placeOn !== undefined) this.waiters.looked(placeOn, untaken)
    }
  }

  /** `counters`: the client's, the account's (or familiar place's) and the address's, in this order. */
  /** The network is the place (/24, /64): one household or office shares its turn in the queue. */
  private admission(clientIp: string, email: string, familiarity: Familiarity): Admission {
    const priority = familiarity === 'address' ? 2 : familiarity === 'place' ? 1 : 0
    return { priority, sources: [`network:${this.addresses.place(clientIp)}`, `account:${digest(email)}`] }
  }

  private reservation(
    attempt: string,
    counters: CounterLimit[],
    ids: FamiliarIds | undefined,
    familiarity: Familiarity,
    admission: Admission,
  ): LoginReservation {
    const settle = async (client: Settlement, others: Settlement) => {
      try {
        await this.store.settle(
          attempt,
          counters.map((counter, index) => ({ ...counter, settlement: index === 0 ? client : others })),
          this.limits.windowSeconds * 1000,
        )
      } catch (error) {
        // Its release will not come: this instance's waiters look again themselves.
        for (const { key } of counters) this.waiters.released(key, 1, 0)
        throw error
      }
    }
    return {
      familiarity,
      admission,
      // The address and its place are familiar from now on, for LOGIN_FAMILIAR_TTL from this login.
      succeeded: async () => {
        await Promise.all([settle('cleared', 'returned'), ids === undefined ? undefined : this.places.remember(ids)])
      },
      failed: () => settle('failed', 'failed'),
      cancelled: () => settle('returned', 'returned'),
    }
  }
}
