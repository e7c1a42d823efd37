// A partner's program as the TypeScript compiler sees it: compiled against the package's built
// .d.ts by scripts/client-consumer-check.mjs, with each TypeScript it is given (the repository's
// pinned one in CI), under a Node and a bundler configuration, with no DOM or Node types.
import {
  ApiClient,
  ApiError,
  isApiError,
  type ErrorCode,
  type ProblemCode,
  type Result,
  type Tokens,
  type UnknownCode,
} from '@receivables/api-client'

let kept: Tokens | undefined
const client = new ApiClient({ baseUrl: 'http://localhost:3000', onTokens: (tokens) => (kept = tokens), retry: { attempts: 3 } })

export async function partner(sellerId: string): Promise<string[]> {
  await client.obtainTokenPair({ email: 'bob@beta.example', password: 'Demo#2026!' })
  const companies: Result<'getUserCompanies'> = await client.getUserCompanies()
  const buyer = companies.flatMap((company) => company.roles).find((role) => role.role === 'buyer')
  if (!buyer) return []
  try {
    const check = await client.checkSellerDocuments({ company_role_id: buyer.company_role_id, seller_id: sellerId })
    const missing = check.documents.filter((document) => document.status !== 'approved').map((document) => document.type)
    const asked = await client.requestSellerDocuments({ company_role_id: buyer.company_role_id, seller_id: sellerId }, { document_types: missing })
    const created: string = asked.created_at
    void created
    return missing
  } catch (error) {
    if (isApiError(error, 'checkSellerDocuments')) {
      const code: ErrorCode<'checkSellerDocuments'> | UnknownCode = error.code
      // @ts-expect-error a misspelled code is no code of the operation (TS2367)
      if (error.code === 'not_fonud') return []
      // @ts-expect-error a code of another operation (route 11) is not one this operation answers
      if (error.code === 'tax_id_immutable') return []
      switch (code) {
        case 'not_found':
        case 'wrong_role':
          return []
        // @ts-expect-error a misspelled case does not compile either (TS2678)
        case 'wrong_rol':
          return []
        case 'unknown': {
          // A code from a newer API: its text, as a string, and the answer's status.
          const raw: string = error.rawCode
          throw new Error(`${error.status} ${raw}`)
        }
        default:
          throw error
      }
    }
    throw error
  }
}

export async function customer(companyRoleId: string): Promise<void> {
  const saved = await client.saveCustomer(
    { company_role_id: companyRoleId, id: '70000000-0000-4000-8000-0000000000aa' },
    { name: 'Partner Customer Ltda', tax_id: '11444777000161' },
    { idempotencyKey: 'kept-with-the-operation' },
  )
  const updated: string = saved.updated_at
  void updated
  // @ts-expect-error tax_id is required by the document
  await client.saveCustomer({ company_role_id: companyRoleId, id: 'x' }, { name: 'No tax id' })
  // @ts-expect-error the path names its parameters
  await client.listTitleDocuments({ title_id: 'x' })
  const answer = await client.send('removeBankAccount', { path: { company_role_id: companyRoleId, bank_account_id: 'y' } })
  const nothing: undefined = answer.data
  void nothing
}

export function describe(error: unknown): string {
  if (!(error instanceof ApiError)) return String(error)
  const known: ProblemCode | UnknownCode = error.code
  return `${error.status} ${known} (${error.kind}, request ${error.requestId ?? '?'}) ${kept ? 'logged in' : ''}`
}
