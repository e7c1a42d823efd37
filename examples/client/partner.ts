/**
 * A partner's program, typed by the client generated from the service's OpenAPI document
 * (schema.d.ts, by openapi-typescript) and calling it with openapi-fetch: log in, refresh, then read
 * the companies (route 4), a seller's KYC checklist (route 7) and a title's documents (route 9), and
 * ask the seller for what is missing (route 5) with an `Idempotency-Key`; `syncCustomer` saves a
 * seller's customer (route 11) with one. Every call goes through retries.ts, which sends again what
 * is safe to send again (docs/retries.md).
 *
 *   npm start                                # the service with its demo data, in another terminal
 *   npx tsx examples/client/partner.ts [http://localhost:3000]
 */
import createClient, { type Middleware } from 'openapi-fetch'
import { pathToFileURL } from 'node:url'
import { idempotencyKey, retryingFetch, type RetryOptions } from './retries.js'
import type { components, paths } from './schema.js'

type Problem = components['schemas']['Problem']

export interface PartnerRun {
  companies: string[]
  buyerRoleId: string
  sellerComplete: boolean
  missing: string[]
  documents: string[]
  /** Route 5's solicitation, or null when nothing was missing; `replayed` when a retry got the kept answer. */
  solicitation: { id: string; documentTypes: string[]; replayed: boolean } | null
  /** Each retry, as `<attempt> <reason>`. */
  retries: string[]
}

/** Keeps the current access token on every request; `refresh()` rotates the pair. */
class Session {
  access = ''
  refreshToken = ''
  readonly middleware: Middleware = {
    onRequest: ({ request }) => {
      if (this.access) request.headers.set('Authorization', `Bearer ${this.access}`)
      return request
    },
  }
}

function failed(what: string, error: Problem | undefined, response: Response): Error {
  return new Error(`${what}: ${response.status} ${error?.code ?? ''} ${error?.detail ?? ''}`.trim())
}

export async function runPartner(
  baseUrl: string,
  credentials: { email: string; password: string },
  ids: { sellerId: string; titleId: string },
  retry: RetryOptions = {},
): Promise<PartnerRun> {
  const retries: string[] = []
  const onRetry = (attempt: number, reason: string) => retries.push(`${attempt} ${reason}`)
  const api = createClient<paths>({ baseUrl, fetch: retryingFetch({ ...retry, onRetry }) })
  const session = new Session()
  api.use(session.middleware)

  // Route 1: a token pair.
  const login = await api.POST('/api/auth/v1/token', { body: credentials })
  if (!login.data) throw failed('login', login.error, login.response)
  session.access = login.data.access
  session.refreshToken = login.data.refresh

  // Route 3: rotate before the access token expires (5 minutes); keep the new refresh token.
  const refreshed = await api.POST('/api/auth/v1/token/refresh', { body: { refresh: session.refreshToken } })
  if (!refreshed.data) throw failed('refresh', refreshed.error, refreshed.response)
  session.access = refreshed.data.access
  session.refreshToken = refreshed.data.refresh

  // Route 4: the caller's companies; a buyer role's id drives the next calls.
  const companies = await api.GET('/api/company/v1/get-user-companies')
  if (!companies.data) throw failed('companies', companies.error, companies.response)
  const buyer = companies.data.flatMap((company) => company.roles).find((role) => role.role === 'buyer')
  if (!buyer) throw new Error(`${credentials.email} acts for no buyer role`)

  // Route 7: the seller's KYC checklist, as this buyer sees it.
  const check = await api.GET('/api/company/v1/{company_role_id}/buyer/check-documents/{seller_id}', {
    params: { path: { company_role_id: buyer.company_role_id, seller_id: ids.sellerId } },
  })
  if (!check.data) throw failed('check-documents', check.error, check.response)

  // Route 9: the documents of a title listed in the marketplace.
  const documents = await api.GET('/api/v1/marketplace/{company_role_id}/title/{title_id}/documents', {
    params: { path: { company_role_id: buyer.company_role_id, title_id: ids.titleId } },
  })
  if (!documents.data) throw failed('title documents', documents.error, documents.response)

  // Route 5: ask for the missing documents. One key for this operation, the same on every attempt:
  // a retry after a lost answer gets that answer again instead of 409 solicitation_already_open.
  const missing = check.data.documents.filter((document) => document.status !== 'approved').map((document) => document.type)
  let solicitation: PartnerRun['solicitation'] = null
  if (missing.length > 0 && !check.data.open_solicitation) {
    const asked = await api.POST('/api/company/{version}/{company_role_id}/document-solicitation/{seller_id}', {
      params: {
        path: { version: 'v1', company_role_id: buyer.company_role_id, seller_id: ids.sellerId },
        header: { 'Idempotency-Key': idempotencyKey() },
      },
      body: { document_types: missing, message: 'Please send the documents missing from your KYC file.' },
    })
    if (!asked.data) throw failed('document solicitation', asked.error, asked.response)
    const replayed = asked.response.headers.get('idempotent-replayed') === 'true'
    solicitation = { id: asked.data.id, documentTypes: asked.data.document_types, replayed }
  }

  return {
    companies: companies.data.map((company) => company.name),
    buyerRoleId: buyer.company_role_id,
    sellerComplete: check.data.complete,
    missing,
    documents: documents.data.map((document) => `${document.kind} ${document.filename} (${document.signature?.status ?? 'unsigned'})`),
    solicitation,
    retries,
  }
}

export interface CustomerRecord {
  id: string
  name: string
  tax_id: string
  email?: string | null
}

/**
 * Route 11 for a seller: saves one of the partner's customers under the partner's own id. The key
 * goes with this save: a retry of it gets its answer again, and can never write this body over a
 * later change of the same customer.
 */
export async function syncCustomer(
  baseUrl: string,
  credentials: { email: string; password: string },
  customer: CustomerRecord,
  retry: RetryOptions = {},
): Promise<{ saved: { id: string; name: string; updated_at: string }; replayed: boolean; retries: string[] }> {
  const retries: string[] = []
  const api = createClient<paths>({ baseUrl, fetch: retryingFetch({ ...retry, onRetry: (attempt, reason) => retries.push(`${attempt} ${reason}`) }) })
  const session = new Session()
  api.use(session.middleware)
  const login = await api.POST('/api/auth/v1/token', { body: credentials })
  if (!login.data) throw failed('login', login.error, login.response)
  session.access = login.data.access
  const companies = await api.GET('/api/company/v1/get-user-companies')
  if (!companies.data) throw failed('companies', companies.error, companies.response)
  const seller = companies.data.flatMap((company) => company.roles).find((role) => role.role === 'seller')
  if (!seller) throw new Error(`${credentials.email} acts for no seller role`)
  const { id, ...body } = customer
  const saved = await api.POST('/api/company/v1/{company_role_id}/customers/{id}', {
    params: { path: { company_role_id: seller.company_role_id, id }, header: { 'Idempotency-Key': idempotencyKey() } },
    body,
  })
  if (!saved.data) throw failed('customer', saved.error, saved.response)
  const replayed = saved.response.headers.get('idempotent-replayed') === 'true'
  return { saved: { id: saved.data.id, name: saved.data.name, updated_at: saved.data.updated_at }, replayed, retries }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // Demo data: bob of Fundo Beta FIDC (buyer) looks at Acme's KYC and at Acme's listed title 1.
  const run = await runPartner(
    process.argv[2] ?? 'http://localhost:3000',
    { email: 'bob@beta.example', password: 'Demo#2026!' },
    { sellerId: '30000000-0000-4000-8000-000000000001', titleId: '50000000-0000-4000-8000-000000000001' },
  )
  console.log(JSON.stringify(run, null, 2))
}
