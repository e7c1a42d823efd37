/**
 * The RateLimit and RateLimit-Policy fields of draft-ietf-httpapi-ratelimit-headers (structured
 * field lists): `RateLimit-Policy: "reads";q=3000;w=10` names each quota and its window in seconds,
 * `RateLimit: "reads";r=2990;t=7` what remains of it and the seconds until it resets.
 */
export interface QuotaState {
  /** The policy's name: the class, and `-company-role` for the company role's own quota. */
  name: string
  quota: number
  windowSeconds: number
  remaining: number
  resetSeconds: number
}

export function rateLimitPolicyField(states: readonly QuotaState[]): string {
  return states.map((state) => `"${state.name}";q=${state.quota};w=${state.windowSeconds}`).join(', ')
}

export function rateLimitField(states: readonly QuotaState[]): string {
  return states.map((state) => `"${state.name}";r=${state.remaining};t=${state.resetSeconds}`).join(', ')
}
