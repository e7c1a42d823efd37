import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'

/** A login to print at start: the embedded demo's (given by src/server.ts, which seeds it). */
export interface DemoLogin {
  email: string
  password: string
}

/**
 * Listens, and says so in one line a person can act on: the URL to open (localhost when bound to
 * every interface), the API docs, and on the embedded demo database the demo login; in production
 * (ALLOW_DEMO_DATA=true) that line is a warning that anyone can log in. Fastify's own lines (one
 * per network interface) are kept out of the log meanwhile.
 */
export async function listenAndAnnounce(app: FastifyInstance, config: Config, demoLogin?: DemoLogin): Promise<void> {
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
  // Only where demo data may be (production refuses the embedded database without ALLOW_DEMO_DATA=true).
  const shown = config.demoData ? demoLogin : undefined
  const demo = shown ? `; demo login ${shown.email} / ${shown.password}` : ''
  const line = `listening on ${url} (API docs ${url}/docs${demo})`
  if (shown && config.env === 'production') {
    app.log.warn(
      { url, docs: `${url}/docs`, demoData: true },
      `${line}: DEMO DATA IN PRODUCTION (ALLOW_DEMO_DATA=true), anyone can log in as its users`,
    )
  } else app.log.info({ url, docs: `${url}/docs` }, line)
}
