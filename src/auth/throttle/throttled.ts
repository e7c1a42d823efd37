import { problem } from '../../lib/problem.js'

/** The 429 of a limit, with the whole seconds until it lets one more attempt through as Retry-After. */
export function throttled(waitMs: number): Error {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
  return problem(429, 'throttled', `Request was throttled. Expected available in ${retryAfter} seconds.`, {
    headers: { 'retry-after': String(retryAfter) },
  })
}
