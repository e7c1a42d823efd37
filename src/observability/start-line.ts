import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { DEMO_PASSWORD } from '../../db/seed/demo.js'
import type { Config } from '../config.js'

/** The demo user the embedded database is seeded with (db/seed/demo.ts). */
const DEMO_LOGIN = 'alice@acme.example'

/**
 * Listens, and says so in one line a person can act on: the URL to open (localhost when bound to
 * every interface), the API docs, and on the embedded demo database the demo login. Fastify's own
 * lines (one per network interface) are kept out of the log meanwhile.
 */
export async function listenAndAnnounce(app: FastifyInstance, config: Config): Promise<void> {
  const level = app.log.level
  if (['info', 'debug', 'trace'].includes(level)) app.log.level = 'warn'
  try {
    await app.listen({ port: config.port, host: config.host })
  } finally {
    app.log.level = level
  }
  const { address, port } = app.server.address() as AddressInfo
  const host = address === '0.0.0.0' || address === '::' ? 'localhost' : address.includes(':') ? `[${address}]` : address
  const url = `http://${host}:${port}`
  const demo = config.databaseUrl === undefined ? `; demo login ${DEMO_LOGIN} / ${DEMO_PASSWORD}` : ''
  app.log.info({ url, docs: `${url}/docs` }, `listening on ${url} (API docs ${url}/docs${demo})`)
}
