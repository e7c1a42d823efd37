/**
 * Floor (a): the least a bearer-authenticated read can cost on this stack. One Fastify route that
 * verifies the service's JWT (HS256, same key, @fastify/jwt) and makes one primary-key query
 * through the service's own pool (createPostgresDatabase: pg Pool via Kysely, same size), with a
 * response schema and the same log level as the service. Started by bench/run.ts as its own process.
 *
 * Environment: PORT, DATABASE_URL, DATABASE_POOL_SIZE, LOG_LEVEL, JWT_SIGNING_KEY.
 */
import fastifyJwt from '@fastify/jwt'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import { createPostgresDatabase } from '../src/db/database.js'

const env = process.env
const database = createPostgresDatabase({
  connectionString: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench',
  poolSize: Number(env.DATABASE_POOL_SIZE ?? 10),
  preparedStatements: env.DATABASE_PREPARED_STATEMENTS !== 'false',
})
const app = Fastify({ logger: { level: env.LOG_LEVEL ?? 'info' } })
await app.register(fastifyJwt, { secret: env.JWT_SIGNING_KEY ?? '', verify: { algorithms: ['HS256'] } })

const User = Type.Object({ id: Type.String(), email: Type.String(), name: Type.String() })

app.get('/health/ready', async () => ({ status: 'ok' }))

app.get('/floor', { schema: { response: { 200: User, 401: Type.Null(), 404: Type.Null() } } }, async (request, reply) => {
  const header = request.headers.authorization ?? ''
  let userId: string
  try {
    userId = app.jwt.verify<{ user_id: string }>(header.slice('Bearer '.length)).user_id
  } catch {
    return reply.code(401).send()
  }
  const user = await database.db.selectFrom('users').select(['id', 'email', 'name']).where('id', '=', userId).executeTakeFirst()
  return user ?? reply.code(404).send()
})

app.addHook('onClose', async () => database.db.destroy())
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void app.close().then(() => process.exit(0)))
await app.listen({ port: Number(env.PORT ?? 3999), host: '127.0.0.1' })
