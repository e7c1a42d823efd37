import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { checkDocumentsRouteSchema, solicitationRouteSchema, type SolicitationRequest } from '../../../schemas/documents.js'
import { emptyBodyAsObject } from '../../lib/optional-body.js'
import { problem } from '../../lib/problem.js'
import { companyRoute } from '../../tenancy/routes.js'
import { sendJsonText } from '../../lib/json-text.js'
import { insertOpenSolicitation, sellerChecklistRead, sellerKycRead, toSellerKyc, type SellerKyc, type Solicitation } from './repository.js'
import { inChecklistOrder, kycChecklist, typesNotApproved, utcToday } from './status.js'

const SUPPORTED_VERSIONS = new Set(['v1'])

const sellerNotFound = () => problem(404, 'not_found', 'Not found.')

const alreadyOpen = (solicitationId: string) =>
  problem(409, 'solicitation_already_open', 'An open document solicitation to this seller already exists.', {
    extra: { solicitation_id: solicitationId },
  })

/** Route 5's path carries the version as a parameter; an unknown one is as if the route did not exist. */
async function requireSupportedVersion(request: FastifyRequest): Promise<void> {
  const { version } = request.params as { version: string }
  if (!SUPPORTED_VERSIONS.has(version)) throw problem(404, 'unsupported_version', 'Unsupported API version; this route exists in v1.')
}

/** The types to ask for: the ones given, else every type not approved; never none. */
function typesToRequest(body: SolicitationRequest, kyc: SellerKyc, today: string) {
  if (body.document_types) return inChecklistOrder(body.document_types)
  const types = typesNotApproved(kycChecklist(kyc.documents, today))
  if (types.length === 0) {
    throw problem(409, 'nothing_to_request', 'Every required document of this seller is approved and valid.')
  }
  return types
}

function assertDueDateNotPast(dueDate: string | null | undefined, today: string): void {
  if (dueDate && dueDate < today) {
    throw problem(400, 'invalid', 'Invalid input.', { extra: { errors: { due_date: ['Must not be in the past.'] } } })
  }
}

const solicitationBody = (solicitation: Solicitation) => ({
  id: solicitation.id,
  buyer_company_role_id: solicitation.buyer_company_role_id,
  seller_id: solicitation.seller_company_role_id,
  document_types: solicitation.document_types,
  message: solicitation.message,
  due_date: solicitation.due_date,
  status: 'open' as const,
  created_at: solicitation.created_at.toISOString(),
})

/** Routes 5 and 7: a buyer's view of a seller's KYC documents, and its requests for more. */
const kycRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.route(
    companyRoute({
      method: 'GET',
      url: '/v1/:company_role_id/buyer/check-documents/:seller_id',
      role: 'buyer',
      permission: 'documents',
      schema: checkDocumentsRouteSchema,
      read: sellerChecklistRead,
      // The answer is built by the database (see sellerChecklistRead), in the response schema's shape.
      handler: async (_request, reply, { data }) => sendJsonText(reply, data.body_json),
    }),
  )

  app.route(
    companyRoute({
      method: 'POST',
      url: '/:version/:company_role_id/document-solicitation/:seller_id',
      role: 'buyer',
      permission: 'documents',
      schema: solicitationRouteSchema,
      config: { idempotency: true },
      preValidation: [requireSupportedVersion, emptyBodyAsObject],
      // The seller's KYC, read in the admitting statement: no second round trip for it. The handler
      // answers its absence, after the due date's check, as a keyed answer (kept for a retry).
      read: sellerKycRead,
      notFound: 'handler',
      handler: async (request, reply, { companyRole, user, data, db }) => {
        const { seller_id: sellerId } = request.params
        const buyerRoleId = companyRole.companyRoleId
        const today = utcToday(new Date())
        assertDueDateNotPast(request.body.due_date, today)
        const kyc = toSellerKyc(data)
        if (!kyc) throw sellerNotFound()
        if (kyc.openSolicitation) throw alreadyOpen(kyc.openSolicitation.id)
        const outcome = await insertOpenSolicitation(db, {
          buyerRoleId,
          sellerRoleId: sellerId,
          documentTypes: typesToRequest(request.body, kyc, today),
          message: request.body.message?.trim() || null,
          dueDate: request.body.due_date ?? null,
          createdBy: user.id,
        })
        if ('alreadyOpen' in outcome) throw alreadyOpen(outcome.alreadyOpen)
        return reply.code(201).send(solicitationBody(outcome.created))
      },
    }),
  )
}

export default kycRoutes
