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
import { scopedSellerKyc, toSellerKyc } from '../src/company/kyc/repository.js'
import { createPostgresDatabase } from '../src/db/database.js'
import { scopedTitleDocuments } from '../src/marketplace/repository.js'
import { groupByCompany, principalCompanies } from '../src/tenancy/user-companies.js'

const env = process.env
const { db } = createPostgresDatabase({
  connectionString: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench',
  poolSize: Number(env.DATABASE_POOL_SIZE ?? 10),
  preparedStatements: true,
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

const json = (reply: FastifyReply, body: string) => reply.type('application/json; charset=utf-8').send(body)

app.get('/health/ready', async () => ({ status: 'ok' }))

app.get('/api/company/v1/get-user-companies', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const rows = await principalCompanies.readUnadmitted(db, key)
  return rows ? json(reply, JSON.stringify(groupByCompany(rows))) : reply.code(401).send()
})

app.get('/api/company/v1/:company_role_id/chat/partners/:partner/presence', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const { company_role_id: companyRoleId, partner } = request.params as Params
  const { data: presence } = await scopedPartnerPresence.readUnadmitted(db, { ...key, companyRoleId: companyRoleId!, partnerRoleId: partner! })
  return presence ? json(reply, JSON.stringify(presence)) : reply.code(404).send()
})

app.get('/api/company/v1/:company_role_id/buyer/check-documents/:seller', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const { company_role_id: companyRoleId, seller } = request.params as Params
  const { data } = await scopedSellerKyc.readUnadmitted(db, { ...key, companyRoleId: companyRoleId!, sellerRoleId: seller! })
  const kyc = toSellerKyc(data)
  return kyc ? json(reply, JSON.stringify(kyc)) : reply.code(404).send()
})

app.get('/api/v1/marketplace/:company_role_id/title/:title/documents', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const { company_role_id: companyRoleId, title } = request.params as Params
  const { data } = await scopedTitleDocuments.readUnadmitted(db, { ...key, companyRoleId: companyRoleId!, titleId: title! })
  return data === undefined ? reply.code(404).send() : json(reply, data.documents_json)
})

app.addHook('onClose', async () => db.destroy())
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)))
await app.listen({ port: Number(env.PORT ?? 3999), host: '127.0.0.1' })
