/**
 * A partner's program on the client package (packages/client, built from the service's OpenAPI
 * document): log in, refresh, then read the companies (route 4), a seller's KYC checklist (route 7)
 * and a title's documents (route 9), and ask the seller for what is missing (route 5); `syncCustomer`
 * saves a seller's customer (route 11). The client sends again what is safe to send again, with one
 * `Idempotency-Key` per operation (docs/retries.md).
 *
 *   npm start                                # the service with its demo data, in another terminal
 *   npx tsx examples/client/partner.ts [http://localhost:3000]
 */
import { pathToFileURL } from 'node:url'
import { ApiClient, ApiError, ConnectionError, type FetchLike, type Retry, type RetryOptions } from '../../packages/client/src/index.js'

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

export interface Transport {
  retry?: RetryOptions
  /** The transport below the client (tests put one here that loses answers). */
  fetch?: FetchLike
}

function client(baseUrl: string, transport: Transport, retries: string[]): ApiClient {
  const onRetry = (retry: Retry) => retries.push(`${retry.attempt} ${retry.reason}`)
  return new ApiClient({
    baseUrl,
    onRetry,
    ...(transport.retry ? { retry: transport.retry } : {}),
    ...(transport.fetch ? { fetch: transport.fetch } : {}),
  })
}

export async function runPartner(
  baseUrl: string,
  credentials: { email: string; password: string },
  ids: { sellerId: string; titleId: string },
  transport: Transport = {},
): Promise<PartnerRun> {
  const retries: string[] = []
  const api = client(baseUrl, transport, retries)

  // Route 1, then route 3 before the access token expires (5 minutes); the client keeps the pair.
  await api.obtainTokenPair(credentials)
  await api.refreshTokens()

  // Route 4: the caller's companies; a buyer role's id drives the next calls.
  const companies = await api.getUserCompanies()
  const buyer = companies.flatMap((company) => company.roles).find((role) => role.role === 'buyer')
  if (!buyer) throw new Error(`${credentials.email} acts for no buyer role`)

  // Route 7: the seller's KYC checklist, as this buyer sees it; route 9: a listed title's documents.
  const check = await api.checkSellerDocuments({ company_role_id: buyer.company_role_id, seller_id: ids.sellerId })
  const documents = await api.listTitleDocuments({ company_role_id: buyer.company_role_id, title_id: ids.titleId })

  // Route 5: ask for the missing documents. The client gives the operation one key, the same on
  // every attempt: a retry after a lost answer gets that answer again instead of 409 solicitation_already_open.
  const missing = check.documents.filter((document) => document.status !== 'approved').map((document) => document.type)
  let solicitation: PartnerRun['solicitation'] = null
  if (missing.length > 0 && !check.open_solicitation) {
    const asked = await api.send('requestSellerDocuments', {
      path: { company_role_id: buyer.company_role_id, seller_id: ids.sellerId },
      body: { document_types: missing, message: 'Please send the documents missing from your KYC file.' },
    })
    solicitation = { id: asked.data.id, documentTypes: asked.data.document_types, replayed: asked.replayed }
  }

  return {
    companies: companies.map((company) => company.name),
    buyerRoleId: buyer.company_role_id,
    sellerComplete: check.complete,
    missing,
    documents: documents.map((document) => `${document.kind} ${document.filename} (${document.signature?.status ?? 'unsigned'})`),
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
  transport: Transport = {},
): Promise<{ saved: { id: string; name: string; updated_at: string }; replayed: boolean; retries: string[] }> {
  const retries: string[] = []
  const api = client(baseUrl, transport, retries)
  await api.obtainTokenPair(credentials)
  const companies = await api.getUserCompanies()
  const seller = companies.flatMap((company) => company.roles).find((role) => role.role === 'seller')
  if (!seller) throw new Error(`${credentials.email} acts for no seller role`)
  const { id, ...body } = customer
  const saved = await api.send('saveCustomer', { path: { company_role_id: seller.company_role_id, id }, body })
  return { saved: { id: saved.data.id, name: saved.data.name, updated_at: saved.data.updated_at }, replayed: saved.replayed, retries }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // Demo data: bob of Fundo Beta FIDC (buyer) looks at Acme's KYC and at Acme's listed title 1.
  const baseUrl = process.argv[2] ?? 'http://localhost:3000'
  try {
    const run = await runPartner(
      baseUrl,
      { email: 'bob@beta.example', password: 'Demo#2026!' },
      { sellerId: '30000000-0000-4000-8000-000000000001', titleId: '50000000-0000-4000-8000-000000000001' },
    )
    console.log(JSON.stringify(run, null, 2))
  } catch (error) {
    // No answer, or an error answer: one line saying which, not a stack.
    if (!(error instanceof ConnectionError || error instanceof ApiError)) throw error
    const hint = error instanceof ConnectionError ? ` (is the service running at ${baseUrl}? npm start)` : ''
    process.stderr.write(`partner: ${error.message}${hint}\n`)
    process.exitCode = 1
  }
}
