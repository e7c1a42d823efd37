/**
 * Own-SQL floors (issue 17): for each read route, a bare Fastify handler that verifies the
 * service's JWT (same key, @fastify/jwt) and runs that route's own statement through the service's
 * pool (createPostgresDatabase, same size, prepared statements and generic plans as the service),
 * then sends what the statement returned as JSON. No tenancy hooks, schemas, presence, problem
 * details: what is left of the route is its SQL. Started by bench/volume-run.ts as its own process.
 *
 * Environment: PORT, DATABASE_URL, DATABASE_POOL_SIZE, LOG_LEVEL, JWT_SIGNING_KEY.
 */
import fastifyJwt from '@fastify/jwt'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { scopedPartnerPresence } from '../src/company/chat/repository.js'
import { scopedSellerKyc } from '../src/company/kyc/repository.js'
import { createPostgresDatabase } from '../src/db/database.js'
import { scopedTitleDocuments } from '../src/marketplace/repository.js'
import { principalCompanies } from '../src/tenancy/user-companies.js'

const env = process.env
const { db } = createPostgresDatabase({
  connectionString: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench',
  poolSize: Number(env.DATABASE_POOL_SIZE ?? 10),
})
const app = Fastify({ logger: { level: env.LOG_LEVEL ?? 'info' } })
await app.register(fastifyJwt, { secret: env.JWT_SIGNING_KEY ?? '', verify: { algorithms: ['HS256'] } })

type Params = Record<string, string>

/** The token's user and family, or a bare 401. */
function claims(request: FastifyRequest, reply: FastifyReply): { userId: string; familyId: string } | undefined {
  try {
    const token = app.jwt.verify<{ user_id: string; fid: string }>((request.headers.authorization ?? '').slice('Bearer '.length))
    return { userId: token.user_id, familyId: token.fid }
  } catch {
    void reply.code(401).send()
    return undefined
  }
}

/** The statement's row (or rows) as JSON: 404 when it found nothing. */
const send = (reply: FastifyReply, rows: unknown[]) =>
  rows.length === 0 ? reply.code(404).send() : reply.type('application/json; charset=utf-8').send(JSON.stringify(rows))

app.get('/health/ready', async () => ({ status: 'ok' }))

app.get('/api/company/v1/get-user-companies', async (request, reply) => {
  const key = claims(request, reply)
  return key ? send(reply, await principalCompanies.statement.rows(db, key)) : reply
})

app.get('/api/company/v1/:company_role_id/chat/partners/:partner/presence', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const { company_role_id: companyRoleId, partner } = request.params as Params
  return send(reply, await scopedPartnerPresence.statement.rows(db, { ...key, companyRoleId: companyRoleId!, partnerRoleId: partner! }))
})

app.get('/api/company/v1/:company_role_id/buyer/check-documents/:seller', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const { company_role_id: companyRoleId, seller } = request.params as Params
  return send(reply, await scopedSellerKyc.statement.rows(db, { ...key, companyRoleId: companyRoleId!, sellerRoleId: seller! }))
})

// Route 9's body is JSON text built by the database: sent as it comes, as the service does.
app.get('/api/v1/marketplace/:company_role_id/title/:title/documents', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const { company_role_id: companyRoleId, title } = request.params as Params
  const row = await scopedTitleDocuments.statement.first(db, { ...key, companyRoleId: companyRoleId!, titleId: title! })
  const documents = row?.documents_json
  return typeof documents === 'string' ? reply.type('application/json; charset=utf-8').send(documents) : reply.code(404).send()
})

app.addHook('onClose', async () => db.destroy())
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)))
await app.listen({ port: Number(env.PORT ?? 3999), host: '127.0.0.1' })
