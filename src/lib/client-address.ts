import { isIPv4, isIPv6 } from 'node:net'

/** The IPv6 prefix length a subscriber is counted by when nothing is configured (ADDRESS_IPV6_PREFIX). */
export const DEFAULT_IPV6_PREFIX = 64

/** An address as its bytes: 4 for IPv4 (an IPv4-mapped IPv6 address included), 16 for IPv6. */
export function addressBytes(address: string): number[] | undefined {
  const text = address.trim().split('%')[0]!.toLowerCase()
  if (isIPv4(text)) return text.split('.').map(Number)
  if (!isIPv6(text)) return undefined
  const [head = '', tail] = text.split('::')
  const groups = (part: string | undefined): number[] =>
    part
      ? part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)]
          const [a, b, c, d] = group.split('.').map(Number)
          return [(a! << 8) | b!, (c! << 8) | d!]
        })
      : []
  const before = groups(head)
  const after = tail === undefined ? [] : groups(tail)
  const all = [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after]
  const bytes = all.flatMap((group) => [group >> 8, group & 0xff])
  // ::ffff:a.b.c.d (in either spelling) is the IPv4 address a dual-stack socket reports.
  const mapped = bytes.slice(0, 10).every((byte) => byte === 0) && bytes[10] === 0xff && bytes[11] === 0xff
  return mapped ? bytes.slice(12) : bytes
}

/** `bytes` cut to their first `prefix` bits, written as a CIDR in the canonical text (RFC 5952 groups, no zero runs elided). */
function network(bytes: number[], prefix: number): string {
  const kept = bytes.map((byte, index) => {
    const bits = Math.max(0, Math.min(8, prefix - index * 8))
    return byte & ((0xff << (8 - bits)) & 0xff)
  })
  if (kept.length === 4) return `${kept.join('.')}/${prefix}`
  const groups = Array.from({ length: Math.ceil(prefix / 16) }, (_, index) => ((kept[index * 2]! << 8) | kept[index * 2 + 1]!).toString(16))
  return `${groups.join(':')}${groups.length < 8 ? '::' : ''}/${prefix}`
}

/**
 * The key a client address is counted by, wherever an address is a key (login and webhook-secret
 * limits, familiar addresses, src/fairness/): an IPv4 address itself, an IPv6 address by its
 * /`ipv6Prefix` (a subscriber's usual allocation), whatever its spelling (compressed, zero-padded,
 * upper case, zone id, IPv4-mapped). Text that is no address (a TRUST_PROXY peer's header) is itself.
 */
export function addressKey(address: string, ipv6Prefix = DEFAULT_IPV6_PREFIX): string {
  const bytes = addressBytes(address)
  if (bytes === undefined) return address.trim().toLowerCase()
  if (bytes.length === 4) return bytes.join('.')
  return network(bytes, ipv6Prefix)
}

/**
 * The place of a client address: its /24 (IPv4) or /64 (IPv6; wider when ADDRESS_IPV6_PREFIX is),
 * the unit an address moves within (a home router's new lease, IPv6 privacy addresses) and the
 * least a network is given.
 */
export function placeOf(address: string, ipv6Prefix = DEFAULT_IPV6_PREFIX): string {
  const bytes = addressBytes(address)
  if (bytes === undefined) return address.trim().toLowerCase()
  return network(bytes, bytes.length === 4 ? 24 : Math.min(64, ipv6Prefix))
}

/** Both keys of a configured deployment, so that callers need not carry the prefix. */
export interface AddressKeys {
  key(address: string): string
  place(address: string): string
}

export const addressKeys = (ipv6Prefix = DEFAULT_IPV6_PREFIX): AddressKeys => ({
  key: (address) => addressKey(address, ipv6Prefix),
  place: (address) => placeOf(address, ipv6Prefix),
})
