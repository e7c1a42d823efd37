import type { RateClass } from '../config.js'

/**
 * Who is shed first when the instance is saturated: large reads, then other reads, then writes
 * (logins and registration among them); token refresh and the e-signature webhook last; health
 * checks never. Higher sheds later.
 */
export const PRIORITIES = ['large-read', 'read', 'write', 'critical', 'health'] as const
export type Priority = (typeof PRIORITIES)[number]

/** How one route is limited: by whom its requests are counted (a principal, or the address), in which class, and its shedding priority. */
export interface RouteFairness {
  /** Undefined: never rate-limited (health, docs, JWKS). */
  rateClass: RateClass | undefined
  /** `principal`: the token's user (and the admitted company role); `address`: the client's address (public routes). */
  key: 'principal' | 'address'
  priority: Priority
}

interface RouteFacts {
  url: string
  method: string | string[]
  authenticated: boolean
  /** The route's own word (`config.priority`), for a read of many rows (route 9). */
  priority: Priority | undefined
}

const isRead = (method: string | string[]) => (Array.isArray(method) ? method : [method]).every((one) => one === 'GET' || one === 'HEAD')

/** Public routes by path: the bearer-token routes are reads or writes by method. */
export function routeFairness({ url, method, authenticated, priority }: RouteFacts): RouteFairness {
  if (authenticated) {
    const read = isRead(method)
    return { rateClass: read ? 'reads' : 'writes', key: 'principal', priority: priority ?? (read ? 'read' : 'write') }
  }
  if (url.startsWith('/health')) return { rateClass: undefined, key: 'address', priority: 'health' }
  if (url.startsWith('/webhook/')) return { rateClass: 'webhooks', key: 'address', priority: 'critical' }
  if (url.endsWith('/token/refresh')) return { rateClass: 'authentication', key: 'address', priority: 'critical' }
  if (url.startsWith('/api/auth/') || url.startsWith('/api/registration/')) return { rateClass: 'authentication', key: 'address', priority: 'write' }
  return { rateClass: undefined, key: 'address', priority: priority ?? 'read' }
}
