/**
 * Own-SQL floors (issue 17): for each read route, a bare Fastify handler that verifies the
 * service's JWT (same key, @fastify/jwt) and runs that route's own statement through the service's
 * pool (createPostgresDatabase, same size, prepared statements and generic plans as the service),
 * then sends what the statement returned as JSON. The statement is the one the route declares: its
 * data query composed with the principal and membership by src/tenancy/scoped-statement.ts. No
 * tenancy hooks, schemas, presence, problem details: what is left of the route is its SQL. Started
 * by bench/volume-run.ts as its own process.
 *
 * Environment: PORT, DATABASE_URL, DATABASE_POOL_SIZE, LOG_LEVEL, JWT_SIGNING_KEY.
 */
import fastifyJwt from '@fastify/jwt'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { partnerPresenceRead } from '../src/company/chat/repository.js'
import { sellerChecklistRead } from '../src/company/kyc/repository.js'
import { createPostgresDatabase } from '../src/db/database.js'
import { titleDocumentsRead } from '../src/marketplace/repository.js'
import { PrincipalStatement, ScopedStatement } from '../src/tenancy/scoped-statement.js'
import { groupByCompany, USER_COMPANIES_ORDER, userCompaniesRead } from '../src/tenancy/user-companies.js'

const env = process.env
const { db } = createPostgresDatabase({
  connectionString: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench',
  poolSize: Number(env.DATABASE_POOL_SIZE ?? 10),
  preparedStatements: true,
})
const app = Fastify({ logger: { level: env.LOG_LEVEL ?? 'info' } })
await app.register(fastifyJwt, { secret: env.JWT_SIGNING_KEY ?? '', verify: { algorithms: ['HS256'] } })

type Params = Record<string, string>

const userCompanies = new PrincipalStatement(userCompaniesRead, USER_COMPANIES_ORDER)
const partnerPresence = new ScopedStatement(partnerPresenceRead)
const sellerChecklist = new ScopedStatement(sellerChecklistRead)
const titleDocuments = new ScopedStatement(titleDocumentsRead)

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
  const { user, data } = await userCompanies.run(db, key, {})
  return user ? json(reply, JSON.stringify(groupByCompany(data))) : reply.code(401).send()
})

app.get('/api/company/v1/:company_role_id/chat/partners/:partner_company_role_id/presence', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const params = request.params as Params
  const { data: presence } = await partnerPresence.run(db, { ...key, companyRoleId: params.company_role_id! }, params as never)
  return presence ? json(reply, JSON.stringify(presence)) : reply.code(404).send()
})

app.get('/api/company/v1/:company_role_id/buyer/check-documents/:seller_id', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const params = request.params as Params
  const { data } = await sellerChecklist.run(db, { ...key, companyRoleId: params.company_role_id! }, params as never)
  return data === undefined ? reply.code(404).send() : json(reply, data.body_json)
})

app.get('/api/v1/marketplace/:company_role_id/title/:title_id/documents', async (request, reply) => {
  const key = claims(request, reply)
  if (!key) return reply
  const params = request.params as Params
  const { data } = await titleDocuments.run(db, { ...key, companyRoleId: params.company_role_id! }, params as never)
  return data === undefined ? reply.code(404).send() : json(reply, data.documents_json)
})

app.addHook('onClose', async () => db.destroy())
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)))
await app.listen({ port: Number(env.PORT ?? 3999), host: '127.0.0.1' })
