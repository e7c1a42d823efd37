/**
 * The key under which a client address is counted: the address itself. The one place to swap for
 * "the network of an address" (an IPv6 /64 counted as one client) once that helper exists.
 */
export function addressKey(ip: string): string {
  return ip
}
