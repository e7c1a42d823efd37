import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'

/** What the start line says of the demo (given by src/server.ts). */
export interface DemoAtStart {
  /** A login to print: the embedded demo's, which src/server.ts seeds. */
  login?: { email: string; password: string } | undefined
  /** The demo accounts a production start (or one on a database marked production) found, allowed by ALLOW_DEMO_DATA=true: named in its warning. */
  accounts?: readonly string[]
}

/**
 * Connections the kernel queues while the event loop is busy (capped by net.core.somaxconn). Node's
 * 511 dropped the SYNs of a gateway or a flood opening a thousand at once: their clients wait 1, 3,
 * 7 s to try again, and time out, where a queued connection is answered (or shed) at once.
 */
const LISTEN_BACKLOG = 4096

/**
 * Listens, and says so in one line a person can act on: the URL to open (localhost when bound to
 * every interface), the API docs, and on the embedded demo database the demo login; in production
 * on a database holding demo accounts (ALLOW_DEMO_DATA=true) that line is a warning naming them.
 * Fastify's own lines (one per network interface) are kept out of the log meanwhile. Answers the URL.
 */
export async function listenAndAnnounce(app: FastifyInstance, config: Config, demo: DemoAtStart = {}): Promise<string> {
  const level = app.log.level
  if (['info', 'debug', 'trace'].includes(level)) app.log.level = 'warn'
  try {
    await app.listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG })
  } finally {
    app.log.level = level
  }
  const { address, port } = app.server.address() as AddressInfo
  const host = address === '0.0.0.0' || address === '::' ? 'localhost' : address.includes(':') ? `[${address}]` : address
  const url = `http://${host}:${port}`
  // Only where demo data may be (production refuses the embedded database without ALLOW_DEMO_DATA=true).
  const shown = config.demoData ? demo.login : undefined
  const line = `listening on ${url} (API docs ${url}/docs${shown ? `; demo login ${shown.email} / ${shown.password}` : ''})`
  const accounts = demo.accounts ?? []
  // Found only in production or on a database marked production (src/server.ts).
  if (accounts.length > 0) {
    app.log.warn(
      { url, docs: `${url}/docs`, demoData: true, demoAccounts: accounts },
      `${line}: DEMO DATA IN PRODUCTION (ALLOW_DEMO_DATA=true), anyone can log in as its users: ${accounts.join(', ')}`,
    )
  } else app.log.info({ url, docs: `${url}/docs` }, line)
  return url
}
