/**
 * Retrying without doing anything twice (docs/retries.md): a `fetch` for openapi-fetch that sends a
 * request again only when that is safe, and waits as the service asks.
 *
 * Safe to send again: a GET; a POST carrying an `Idempotency-Key` (routes 5, 10, 11), which the
 * service answers once and replays; a token refresh (route 3) within the service's grace, which
 * answers the same new refresh token to the same spent one. Sent again on: a network error (the
 * answer may have been lost), 502, 503 and 504 (from the service or the gateway), 429, and
 * `409 idempotency_key_in_use` (the first attempt still runs); `Retry-After` is honoured.
 * Any other POST is sent once: it may have been done.
 */

export interface RetryOptions {
  /** Attempts in all, the first included. */
  attempts?: number
  /** The first wait without `Retry-After`; doubled each time, with jitter. */
  baseDelayMs?: number
  /** No wait longer than this, whatever `Retry-After` says. */
  maxDelayMs?: number
  /** A refresh is sent again only this long after its first attempt: under REFRESH_REUSE_GRACE (30 s). */
  refreshGraceMs?: number
  /** The transport below (tests put one here that loses answers). */
  fetch?: (request: Request) => Promise<Response>
  /** Hears each retry: the attempt that failed and why. */
  onRetry?: (attempt: number, reason: string) => void
}

const RETRY_STATUSES = new Set([429, 502, 503, 504])
const REFRESH_PATH = /\/api\/auth\/v1\/token\/refresh\/?$/

/** Makes a key for one operation: reuse it for every attempt of that operation, never for another. */
export const idempotencyKey = (): string => crypto.randomUUID()

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function isResendable(request: Request, startedAt: number, refreshGraceMs: number): boolean {
  if (request.method === 'GET' || request.method === 'HEAD') return true
  if (request.headers.has('Idempotency-Key')) return true
  return REFRESH_PATH.test(new URL(request.url).pathname) && Date.now() - startedAt < refreshGraceMs
}

/** Why an answer is worth another attempt, or undefined when it is the answer. */
async function retryReason(response: Response): Promise<string | undefined> {
  if (RETRY_STATUSES.has(response.status)) return `${response.status}`
  if (response.status !== 409 || !response.headers.get('content-type')?.includes('problem+json')) return undefined
  const problem = (await response.clone().json()) as { code?: string }
  return problem.code === 'idempotency_key_in_use' ? '409 idempotency_key_in_use' : undefined
}

function delayFor(response: Response | undefined, attempt: number, options: Required<Pick<RetryOptions, 'baseDelayMs' | 'maxDelayMs'>>): number {
  const retryAfter = Number(response?.headers.get('retry-after'))
  const wanted = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : options.baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random())
  return Math.min(wanted, options.maxDelayMs)
}

export function retryingFetch(options: RetryOptions = {}): (request: Request) => Promise<Response> {
  const { attempts = 5, baseDelayMs = 200, maxDelayMs = 30_000, refreshGraceMs = 25_000 } = options
  const send = options.fetch ?? ((request: Request) => fetch(request))
  return async (request) => {
    const startedAt = Date.now()
    for (let attempt = 1; ; attempt++) {
      // Each attempt sends a copy: a body can be read once.
      const copy = request.clone()
      let response: Response | undefined
      let reason: string | undefined
      try {
        response = await send(copy)
        reason = await retryReason(response)
      } catch (error) {
        reason = `network error: ${(error as Error).message}`
        if (attempt >= attempts || !isResendable(request, startedAt, refreshGraceMs)) throw error
      }
      if (reason === undefined && response) return response
      if (attempt >= attempts || !isResendable(request, startedAt, refreshGraceMs)) return response as Response
      options.onRetry?.(attempt, reason ?? 'unknown')
      await response?.body?.cancel()
      await sleep(delayFor(response, attempt, { baseDelayMs, maxDelayMs }))
    }
  }
}
