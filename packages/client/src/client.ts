import { ApiError, ConnectionError, type ProblemFields } from './errors.js'
import { host, sleep, type FetchLike, type FetchResponse } from './host.js'
import { rateLimitOf, type RateLimitQuota } from './rate-limit.js'
import type { operations } from './openapi.js'

/**
 * The partner operations of the API (the webhook is the e-signature provider's, the health probes
 * the operators'), with the method and path the OpenAPI document gives each: a test keeps this
 * table equal to the document.
 */
export const OPERATIONS = {
  obtainTokenPair: { method: 'POST', path: '/api/auth/v1/token', auth: false, keyed: false },
  logIn: { method: 'POST', path: '/api/auth/v1/login', auth: false, keyed: false },
  refreshTokens: { method: 'POST', path: '/api/auth/v1/token/refresh', auth: false, keyed: false },
  getJsonWebKeySet: { method: 'GET', path: '/.well-known/jwks.json', auth: false, keyed: false },
  getUserCompanies: { method: 'GET', path: '/api/company/v1/get-user-companies', auth: true, keyed: false },
  checkSellerDocuments: { method: 'GET', path: '/api/company/v1/{company_role_id}/buyer/check-documents/{seller_id}', auth: true, keyed: false },
  requestSellerDocuments: {
    method: 'POST',
    path: '/api/company/{version}/{company_role_id}/document-solicitation/{seller_id}',
    auth: true,
    keyed: true,
  },
  getChatPartnerPresence: {
    method: 'GET',
    path: '/api/company/v1/{company_role_id}/chat/partners/{partner_company_role_id}/presence',
    auth: true,
    keyed: false,
  },
  removeBankAccount: { method: 'DELETE', path: '/api/company/v1/{company_role_id}/bank-account/{bank_account_id}', auth: true, keyed: false },
  saveCustomer: { method: 'POST', path: '/api/company/v1/{company_role_id}/customers/{id}', auth: true, keyed: true },
  listTitleDocuments: { method: 'GET', path: '/api/v1/marketplace/{company_role_id}/title/{title_id}/documents', auth: true, keyed: false },
  confirmMigratedAccount: { method: 'POST', path: '/api/registration/v1/confirm-migration-account/{uidb64}/{token}', auth: false, keyed: true },
} as const

export type PartnerOperation = keyof typeof OPERATIONS

type Responses<Operation extends PartnerOperation> = operations[Operation]['responses']
type JsonOf<Response> = Response extends { content: { 'application/json': infer Body } } ? Body : undefined

/** What an operation answers on success (`undefined` for a 204). */
export type Result<Operation extends PartnerOperation> = 200 extends keyof Responses<Operation>
  ? JsonOf<Responses<Operation>[200]>
  : 201 extends keyof Responses<Operation>
    ? JsonOf<Responses<Operation>[201]>
    : undefined

/** The JSON body an operation takes. */
export type RequestBody<Operation extends PartnerOperation> =
  NonNullable<operations[Operation]['requestBody']> extends { content: { 'application/json': infer Body } } ? Body : never

/** An operation's path parameters; the path version (`{version}`) is the client's. */
export type PathParams<Operation extends PartnerOperation> = Omit<NonNullable<operations[Operation]['parameters']['path']>, 'version'>

type PathInput<Operation extends PartnerOperation> = [NonNullable<operations[Operation]['parameters']['path']>] extends [never]
  ? { path?: undefined }
  : { path: PathParams<Operation> }
type BodyInput<Operation extends PartnerOperation> = [RequestBody<Operation>] extends [never]
  ? { body?: undefined }
  : undefined extends operations[Operation]['requestBody']
    ? { body?: RequestBody<Operation> }
    : { body: RequestBody<Operation> }

/** What `send` takes: path parameters, body, and for routes 5, 10 and 11 the operation's key. */
export type Input<Operation extends PartnerOperation> = PathInput<Operation> &
  BodyInput<Operation> & {
    /**
     * The `Idempotency-Key` of this operation (routes 5, 10, 11): sent on every attempt, so that a
     * retry gets the first answer instead of doing it twice. Made here when not given; give your
     * own, kept with the operation, to resend it safely after a restart of your program too.
     */
    idempotencyKey?: string
  }

export interface Tokens {
  access: string
  refresh: string
}

/** One attempt sent again, and why. */
export interface Retry {
  operation: PartnerOperation
  attempt: number
  reason: string
  delayMs: number
}

export interface RetryOptions {
  /** Attempts in all, the first included (5). */
  attempts?: number
  /** The first wait when the answer gives no `Retry-After`, doubled each time, with jitter (200 ms). */
  baseDelayMs?: number
  /** No wait longer than this, whatever `Retry-After` says (30 s); a longer wait is not waited: the answer is returned. */
  maxDelayMs?: number
  /**
   * A refresh is sent again only this long after its first attempt (25 s): within the service's
   * REFRESH_REUSE_GRACE (30 s), a spent refresh token gets the same successor; after it, sending it
   * again would be a replay, which ends the session.
   */
  refreshGraceMs?: number
}

export interface ClientOptions {
  /** Where the API is, e.g. `https://api.platform.example` (the OpenAPI document's `servers`). */
  baseUrl: string
  /** Tokens of a session already open (e.g. kept by your program); else log in first. */
  tokens?: Tokens
  /** Told each new pair (login, refresh): keep the refresh token where your program keeps secrets. */
  onTokens?: (tokens: Tokens) => void
  /** Told each attempt sent again. */
  onRetry?: (retry: Retry) => void
  retry?: RetryOptions
  /** The transport; the global `fetch` by default. */
  fetch?: FetchLike
}

/** A successful answer, with what the client knows of how it came. */
export interface Answer<Data> {
  data: Data
  status: number
  /** The service's `X-Request-Id`. */
  requestId: string | undefined
  /** True when the service replayed the answer it kept for this Idempotency-Key (a retry of a done operation). */
  replayed: boolean
  /** The operation's `Idempotency-Key`, for routes 5, 10 and 11. */
  idempotencyKey: string | undefined
  /** Attempts sent again, and why. */
  retries: Retry[]
  /** The caller's quotas after this request, the nearest to its end first (empty on routes without). */
  rateLimit: RateLimitQuota[]
}

/** Statuses after which an attempt that may be sent again is: the service did nothing, or asks to wait. */
const RETRY_STATUSES = new Set([408, 429, 502, 503, 504])
/** A gateway's answers that leave unknown whether the service did the work. */
const UNKNOWN_OUTCOME = new Set([502, 504])

interface Received {
  response: FetchResponse
  problem: ProblemFields | undefined
  json: unknown
  /** Whether an earlier attempt may have been done although its answer was lost. */
  mayHaveBeenDone: boolean
}

function parse(response: FetchResponse, text: string): { json: unknown; problem: ProblemFields | undefined } {
  const type = response.headers.get('content-type') ?? ''
  if (text === '' || !type.includes('json')) return { json: undefined, problem: undefined }
  try {
    const json: unknown = JSON.parse(text)
    const problem = response.status >= 400 && typeof json === 'object' && json !== null ? (json as ProblemFields) : undefined
    return { json, problem }
  } catch {
    return { json: undefined, problem: undefined } // not the service's JSON (a proxy's page)
  }
}

/**
 * A client of the API for a partner's backend: typed from the OpenAPI document, it keeps the
 * session's tokens (refreshing an expired access token once, transparently), and sends again what
 * is safe to send again (docs/retries.md): reads, the keyed writes (one key per operation, reused on
 * every attempt), a refresh within its grace; on a lost answer, `408`, `429`, `502`, `503`, `504` and
 * `409 idempotency_key_in_use`, waiting as `Retry-After` says. Other errors throw an `ApiError` whose
 * `code` is typed with the operation's documented codes.
 */
export class ApiClient {
  private readonly baseUrl: string
  private readonly options: ClientOptions
  private readonly transport: FetchLike
  private session: Tokens | undefined
  private refreshing: Promise<Tokens> | undefined

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.options = options
    this.session = options.tokens
    const transport = options.fetch ?? host.fetch
    if (!transport) throw new Error('no fetch: pass one in the options (Node.js 20 and newer have it)')
    this.transport = transport
  }

  /** The session's tokens, if any. */
  get tokens(): Tokens | undefined {
    return this.session
  }

  private keep(tokens: Tokens): void {
    this.session = { access: tokens.access, refresh: tokens.refresh }
    this.options.onTokens?.(this.session)
  }

  /** Route 1: a token pair for e-mail and password; the session then uses it. */
  async obtainTokenPair(credentials: RequestBody<'obtainTokenPair'>): Promise<Result<'obtainTokenPair'>> {
    const { data } = await this.send('obtainTokenPair', { body: credentials })
    this.keep(data)
    return data
  }

  /** Route 2: the same, with the user and their companies. */
  async logIn(credentials: RequestBody<'logIn'>): Promise<Result<'logIn'>> {
    const { data } = await this.send('logIn', { body: credentials })
    this.keep(data)
    return data
  }

  /**
   * Route 3: rotates the session's pair. Concurrent callers share one refresh; a lost answer is sent
   * again within the grace, and gets the same new refresh token.
   */
  refreshTokens(): Promise<Tokens> {
    this.refreshing ??= (async () => {
      const refresh = this.session?.refresh
      if (!refresh) throw new Error('refreshTokens: no refresh token; log in first')
      const { data } = await this.send('refreshTokens', { body: { refresh } })
      this.keep(data)
      return data
    })().finally(() => {
      this.refreshing = undefined
    })
    return this.refreshing
  }

  getJsonWebKeySet(): Promise<Result<'getJsonWebKeySet'>> {
    return this.data('getJsonWebKeySet', {})
  }

  /** Route 4: the caller's companies, with their roles and permissions. */
  getUserCompanies(): Promise<Result<'getUserCompanies'>> {
    return this.data('getUserCompanies', {})
  }

  /** Route 7: a seller's KYC checklist, as a buyer role sees it. */
  checkSellerDocuments(path: PathParams<'checkSellerDocuments'>): Promise<Result<'checkSellerDocuments'>> {
    return this.data('checkSellerDocuments', { path })
  }

  /** Route 5: asks a seller for KYC documents (keyed: a retry never opens a second solicitation). */
  requestSellerDocuments(
    path: PathParams<'requestSellerDocuments'>,
    body: RequestBody<'requestSellerDocuments'> = {},
    options: { idempotencyKey?: string } = {},
  ): Promise<Result<'requestSellerDocuments'>> {
    return this.data('requestSellerDocuments', { path, body, ...options })
  }

  /** Route 6: a chat partner's presence. */
  getChatPartnerPresence(path: PathParams<'getChatPartnerPresence'>): Promise<Result<'getChatPartnerPresence'>> {
    return this.data('getChatPartnerPresence', { path })
  }

  /** Route 8: removes a bank account; a retry after a lost answer that finds it gone counts as done. */
  async removeBankAccount(path: PathParams<'removeBankAccount'>): Promise<void> {
    await this.send('removeBankAccount', { path })
  }

  /** Route 11: saves a customer under your own id (keyed: a late retry never undoes a later change). */
  saveCustomer(
    path: PathParams<'saveCustomer'>,
    body: RequestBody<'saveCustomer'>,
    options: { idempotencyKey?: string } = {},
  ): Promise<Result<'saveCustomer'>> {
    return this.data('saveCustomer', { path, body, ...options })
  }

  /** Route 9: a listed title's documents and their e-signature state. */
  listTitleDocuments(path: PathParams<'listTitleDocuments'>): Promise<Result<'listTitleDocuments'>> {
    return this.data('listTitleDocuments', { path })
  }

  /** Route 10: confirms a migrated account from its e-mail's link; the session then uses the pair it answers. */
  async confirmMigratedAccount(
    path: PathParams<'confirmMigratedAccount'>,
    body: RequestBody<'confirmMigratedAccount'> = {},
    options: { idempotencyKey?: string } = {},
  ): Promise<Result<'confirmMigratedAccount'>> {
    const { data } = await this.send('confirmMigratedAccount', { path, body, ...options })
    this.keep(data)
    return data
  }

  private async data<Operation extends PartnerOperation>(operation: Operation, input: Input<Operation>): Promise<Result<Operation>> {
    return (await this.send(operation, input)).data
  }

  /** Any partner operation, with the whole answer: status, request id, whether it was replayed, the retries. */
  async send<Operation extends PartnerOperation>(operation: Operation, input: Input<Operation>): Promise<Answer<Result<Operation>>> {
    const spec = OPERATIONS[operation]
    const idempotencyKey = spec.keyed ? (input.idempotencyKey ?? newKey()) : undefined
    const url = this.baseUrl + fillPath(spec.path, { version: 'v1', ...(input.path as Record<string, string> | undefined) })
    const body = input.body === undefined ? undefined : JSON.stringify(input.body)
    const retries: Retry[] = []
    let refreshed = false
    for (;;) {
      const received = await this.attempts(operation, url, body, idempotencyKey, retries)
      const { response, problem, json } = received
      if (response.status === 401 && spec.auth && !refreshed && this.session?.refresh && problem?.code === 'token_not_valid') {
        // The access token expired (or was rotated away): one refresh, then the same operation, same key.
        refreshed = true
        await this.refreshTokens()
        continue
      }
      // Route 8 sent again after a lost answer: gone now means the lost attempt removed it (docs/retries.md).
      const done = response.status === 404 && spec.method === 'DELETE' && received.mayHaveBeenDone
      if (response.status >= 400 && !done) throw new ApiError(operation, response.status, problem ?? {}, response.headers)
      return {
        data: json as Result<Operation>,
        status: response.status,
        requestId: response.headers.get('x-request-id') ?? undefined,
        replayed: response.headers.get('idempotent-replayed') === 'true',
        idempotencyKey,
        retries,
        rateLimit: rateLimitOf(response.headers),
      }
    }
  }

  /** Whether an attempt of `operation` may be sent again (docs/retries.md). */
  private resendable(operation: PartnerOperation, keyed: boolean, startedAt: number): boolean {
    const { method } = OPERATIONS[operation]
    if (method === 'GET' || method === 'DELETE' || keyed) return true
    // Each login is a session of its own: one more is harmless.
    if (operation === 'obtainTokenPair' || operation === 'logIn') return true
    return operation === 'refreshTokens' && Date.now() - startedAt < (this.options.retry?.refreshGraceMs ?? 25_000)
  }

  private async attempts(
    operation: PartnerOperation,
    url: string,
    body: string | undefined,
    idempotencyKey: string | undefined,
    retries: Retry[],
  ): Promise<Received> {
    const { attempts = 5, baseDelayMs = 200, maxDelayMs = 30_000 } = this.options.retry ?? {}
    const spec = OPERATIONS[operation]
    const startedAt = Date.now()
    let mayHaveBeenDone = false
    for (let attempt = 1; ; attempt++) {
      const headers: Record<string, string> = { accept: 'application/json' }
      if (body !== undefined) headers['content-type'] = 'application/json'
      if (idempotencyKey) headers['idempotency-key'] = idempotencyKey
      if (spec.auth && this.session) headers.authorization = `Bearer ${this.session.access}`
      let received: Received | undefined
      let reason: string
      try {
        const response = await this.transport(url, { method: spec.method, headers, ...(body === undefined ? {} : { body }) })
        received = { response, ...parse(response, await response.text()), mayHaveBeenDone }
        const inUse = response.status === 409 && received.problem?.code === 'idempotency_key_in_use'
        if (!RETRY_STATUSES.has(response.status) && !inUse) return received
        reason = inUse ? '409 idempotency_key_in_use' : String(response.status)
        if (UNKNOWN_OUTCOME.has(response.status)) mayHaveBeenDone = true
      } catch (error) {
        if (attempt >= attempts || !this.resendable(operation, idempotencyKey !== undefined, startedAt)) throw new ConnectionError(operation, error)
        reason = `no answer: ${error instanceof Error ? error.message : String(error)}`
        mayHaveBeenDone = true
      }
      if (attempt >= attempts || !this.resendable(operation, idempotencyKey !== undefined, startedAt)) {
        if (received) return received
      }
      const retryAfter = Number(received?.response.headers.get('retry-after') ?? Number.NaN)
      // Past Retry-After by up to a fifth more, so that clients refused together do not come back together.
      const asked = Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 * (1 + 0.2 * Math.random()) : undefined
      if (asked !== undefined && asked > maxDelayMs && received) return received
      const backoff = baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random())
      const delayMs = Math.round(Math.min(asked ?? backoff, maxDelayMs))
      const retry = { operation, attempt, reason, delayMs }
      retries.push(retry)
      this.options.onRetry?.(retry)
      await sleep(delayMs)
    }
  }
}

/** A new Idempotency-Key: one per operation, the same on every attempt of it. */
export function newKey(): string {
  if (!host.crypto) throw new Error('no crypto.randomUUID: pass idempotencyKey yourself')
  return host.crypto.randomUUID()
}

function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const value = values[name]
    if (value === undefined) throw new Error(`path parameter ${name} missing for ${template}`)
    return encodeURIComponent(value)
  })
}
