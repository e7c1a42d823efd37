import { createHmac, hkdfSync } from 'node:crypto'
import { isIPv4, isIPv6 } from 'node:net'
import type { CounterStore } from '../../lib/counter-store.js'

/**
 * The place of a client address: its /24 (IPv4) or /64 (IPv6), the unit an address moves within
 * (a home router's new lease, IPv6 privacy addresses) and the least a network is given.
 */
export function placeOf(address: string): string {
  const ipv4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ?? address
  if (isIPv4(ipv4)) return `${ipv4.split('.').slice(0, 3).join('.')}.0/24`
  if (!isIPv6(address)) return address
  const [head = '', tail] = address.split('%')[0]!.split('::')
  const groups = (text: string | undefined) => (text ? text.split(':').flatMap((group) => (group.includes('.') ? ['0', '0'] : [group])) : [])
  const before = groups(head)
  const after = tail === undefined ? [] : groups(tail)
  const all = [...before, ...Array<string>(8 - before.length - after.length).fill('0'), ...after]
  return `${all
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`
}

/** The key of the places' HMAC, derived from a secret every instance shares (the token-signing key). */
export const familiarPlacesKey = (secret: string): Buffer => Buffer.from(hkdfSync('sha256', secret, 'receivables-api', 'login familiar places', 32))

/**
 * The places an account logged in from within `ttlMs` (§2 route 1, §5): each a mark in the counter
 * store named by an HMAC of (e-mail, place) under a server key, so that what outlives the failure
 * window names neither the address nor the e-mail, and cannot be searched for without the key.
 */
export class FamiliarPlaces {
  constructor(
    private readonly store: CounterStore,
    private readonly key: Buffer,
    private readonly ttlMs: number,
  ) {}

  /** The place's id for this account, undefined when familiar places are off (LOGIN_FAMILIAR_TTL=0). */
  id(email: string, clientIp: string): string | undefined {
    if (this.ttlMs <= 0) return undefined
    return createHmac('sha256', this.key)
      .update(`${email}\n${placeOf(clientIp)}`)
      .digest('hex')
      .slice(0, 32)
  }

  isFamiliar(id: string): Promise<boolean> {
    return this.store.isMarked(`familiar:${id}`)
  }

  /** A login succeeded from the place: familiar for `ttlMs` more. */
  remember(id: string): Promise<void> {
    return this.store.mark(`familiar:${id}`, this.ttlMs)
  }
}
