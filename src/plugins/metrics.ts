import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ServiceMetrics } from '../observability/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The service's Prometheus metrics (src/observability/metrics.ts). */
    metrics: ServiceMetrics
  }
}

export interface MetricsPluginOptions {
  /** Time every request (off when METRICS_PORT disables the metrics: nobody would read them). */
  requests: boolean
}

/** The metrics server of each app that serves one, closed with the app. */
const metricsServers = new WeakMap<ServiceMetrics, Server>()

/**
 * Makes `app.metrics` available and times every request in one onResponse hook. The route label is
 * the route's pattern (`/api/v1/marketplace/:company_role_id/titles/:title_id/documents`), never the
 * URL, and the time is Fastify's own (`reply.elapsedTime`): no per-request timer of our own.
 */
export default fp(
  async function metricsPlugin(app: FastifyInstance, options: MetricsPluginOptions) {
    const metrics = new ServiceMetrics()
    app.decorate('metrics', metrics)
    app.addHook('onClose', async () => {
      const server = metricsServers.get(metrics)
      if (!server) return
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    })
    if (!options.requests) return
    app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      metrics.observeRequest(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime)
      done()
    })
  },
  { name: 'metrics' },
)

/**
 * Serves `GET /metrics` on its own port and address (METRICS_HOST, loopback unless told), apart from
 * the API, so that the gateway in front of the API does not expose it: it shows the Node version,
 * heap and counters. Process and event-loop collectors start here, only in a process that serves them.
 */
export async function startMetricsServer(app: FastifyInstance, port: number, host: string): Promise<Server> {
  const { metrics } = app
  metrics.collectProcessMetrics()
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]
    if (request.method !== 'GET' || (path !== '/metrics' && path !== '/metrics/')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
      return
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (error: unknown) => {
        app.log.error({ err: error }, 'metrics collection failed')
        response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n')
      },
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  metricsServers.set(metrics, server)
  const { address } = server.address() as AddressInfo
  app.log.info({ metrics: `${address}:${port}` }, `metrics on ${address.includes(':') ? `[${address}]` : address}:${port}/metrics`)
  return server
}
