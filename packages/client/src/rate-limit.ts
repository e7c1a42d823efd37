/** One quota of the caller, from the answer's `RateLimit-Policy` and `RateLimit` fields (docs/api.md, Limits). */
export interface RateLimitQuota {
  /** The policy: `reads`, `writes`, `authentication`, `webhooks`, or `<class>-company-role`. */
  name: string
  /** Requests per window, and the window in seconds (RateLimit-Policy's `q` and `w`). */
  quota: number | undefined
  windowSeconds: number | undefined
  /** What is left, and the seconds until the window resets (RateLimit's `r` and `t`). */
  remaining: number
  resetSeconds: number
}

/** Each item of a structured-field list `"name";k=v;k=v, …` as its name and numeric parameters. */
function fieldItems(text: string | null): Map<string, Record<string, number>> {
  const items = new Map<string, Record<string, number>>()
  for (const item of (text ?? '').split(',')) {
    const [name, ...parameters] = item.trim().split(';')
    if (!name) continue
    const values: Record<string, number> = {}
    for (const parameter of parameters) {
      const [key, value] = parameter.split('=')
      if (key && value !== undefined && Number.isFinite(Number(value))) values[key.trim()] = Number(value)
    }
    items.set(name.replace(/^"|"$/g, ''), values)
  }
  return items
}

/** The quotas an answer reports, the nearest to its end first; empty when the answer carries none. */
export function rateLimitOf(headers: { get(name: string): string | null }): RateLimitQuota[] {
  const policies = fieldItems(headers.get('ratelimit-policy'))
  const quotas: RateLimitQuota[] = []
  for (const [name, state] of fieldItems(headers.get('ratelimit'))) {
    if (state.r === undefined || state.t === undefined) continue
    const policy = policies.get(name)
    quotas.push({ name, quota: policy?.q, windowSeconds: policy?.w, remaining: state.r, resetSeconds: state.t })
  }
  return quotas.sort((a, b) => a.remaining - b.remaining)
}
