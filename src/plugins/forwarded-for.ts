import type { IncomingMessage } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import type { TrustProxySetting } from '../observability/trace-context.js'

/** The untrusted X-Forwarded-For is logged at most this often: a misconfigured gateway sends it with every request. */
const WARN_EVERY_MS = 60_000

/**
 * Whether Fastify takes the client address from the X-Forwarded-For of `request`'s peer, as its
 * `trustProxy` decides for the first hop: everyone, no one, a hop count (the peer is hop 0), or the
 * addresses and CIDRs listed.
 */
export function forwardedForTrusted(setting: TrustProxySetting): (request: IncomingMessage) => boolean {
  if (typeof setting === 'boolean') return () => setting
  if (typeof setting === 'number') return () => setting > 0
  const trusted = proxyAddr.compile(setting)
  return (request) => {
    const address = request.socket?.remoteAddress
    return address !== undefined && trusted(address, 0)
  }
}

/**
 * Makes a gateway missing from TRUST_PROXY visible (docs/runbook.md, UntrustedForwardedFor): the
 * service then takes the gateway for the client, and one client's failed logins lock out everyone
 * behind it. Each request with an X-Forwarded-For its peer may not set is counted, with a warning
 * at most once a minute; production without TRUST_PROXY is warned about at start.
 */
export default fp(
  async function forwardedForCheck(app: FastifyInstance, { config }: { config: Config }) {
    if (config.env === 'production' && config.trustProxy === false) {
      app.log.warn(
        "TRUST_PROXY is unset: behind a gateway every client is the gateway, and one client's failed logins lock out all (set it to the gateway's addresses; docs/operations.md)",
      )
    }
    const trusted = forwardedForTrusted(config.trustProxy)
    let warnedAt = -Infinity
    let unwarned = 0
    app.addHook('onRequest', async (request) => {
      if (request.headers['x-forwarded-for'] === undefined || trusted(request.raw)) return
      app.metrics.untrustedForwardedFor.inc()
      unwarned += 1
      if (performance.now() - warnedAt < WARN_EVERY_MS) return
      app.log.warn(
        { peer: request.socket.remoteAddress, requests: unwarned },
        'X-Forwarded-For from a peer TRUST_PROXY does not trust: the peer is taken for the client (a gateway missing from TRUST_PROXY?)',
      )
      warnedAt = performance.now()
      unwarned = 0
    })
  },
  { name: 'forwarded-for-check', dependencies: ['metrics'] },
)
