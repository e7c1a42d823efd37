import { createHmac, hkdfSync } from 'node:crypto'
import { addressKeys as defaultAddressKeys, type AddressKeys } from '../../lib/client-address.js'
import type { CounterStore } from '../../lib/counter-store.js'

/** The key of the places' HMAC, derived from a secret every instance shares (the token-signing key). */
export const familiarPlacesKey = (secret: string): Buffer => Buffer.from(hkdfSync('sha256', secret, 'receivables-api', 'login familiar places', 32))

/** The ids of a login's exact address (its /64 for IPv6) and of its place (/24, /64) for one account. */
export interface FamiliarIds {
  address: string
  place: string
}

/** How familiar a login's source is to the account: its very address, only its place, or neither. */
export type Familiarity = 'address' | 'place' | undefined

/**
 * The addresses and places an account logged in from within `ttlMs` (§2 route 1, §5): each a mark
 * in the counter store named by an HMAC of (e-mail, address or place) under a server key, so that
 * what outlives the failure window names neither the address nor the e-mail, and cannot be
 * searched for without the key. The exact address has a budget of its own ahead of its place's,
 * so that strangers elsewhere in the owner's /24 cannot spend the owner's.
 */
export class FamiliarPlaces {
  constructor(
    private readonly store: CounterStore,
    private readonly key: Buffer,
    private readonly ttlMs: number,
    private readonly addresses: AddressKeys = defaultAddressKeys(),
  ) {}

  private hmac(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('hex').slice(0, 32)
  }

  /** The ids for this account, undefined when familiar places are off (LOGIN_FAMILIAR_TTL=0). */
  ids(email: string, clientIp: string): FamiliarIds | undefined {
    if (this.ttlMs <= 0) return undefined
    // The place's text is the one of round 4, so that the marks made then still count.
    return {
      place: this.hmac(`${email}\n${this.addresses.place(clientIp)}`),
      address: this.hmac(`${email}\naddress ${this.addresses.key(clientIp)}`),
    }
  }

  async familiarity(ids: FamiliarIds | undefined): Promise<Familiarity> {
    if (ids === undefined) return undefined
    const [address, place] = await Promise.all([this.store.isMarked(`familiar-address:${ids.address}`), this.store.isMarked(`familiar:${ids.place}`)])
    return address ? 'address' : place ? 'place' : undefined
  }

  /** A login succeeded from the address: it and its place are familiar for `ttlMs` more. */
  async remember(ids: FamiliarIds): Promise<void> {
    await Promise.all([this.store.mark(`familiar-address:${ids.address}`, this.ttlMs), this.store.mark(`familiar:${ids.place}`, this.ttlMs)])
  }
}
