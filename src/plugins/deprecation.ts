import type { FastifyReply, FastifyRequest, onRequestHookHandler, onSendHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { problem } from '../lib/problem.js'

/** A deprecated operation's dates and replacement (docs/versioning.md, "Deprecation"). */
export interface Deprecation {
  /** When it was (or will be) deprecated: `Deprecation: @<unix time>` (RFC 9745). */
  deprecatedAt: Date
  /** When it stops answering: `Sunset` (RFC 8594); then `410 gone`. */
  sunsetAt: Date
  /** The replacement's documentation: `Link: <…>; rel="deprecation"`. */
  replacement: string
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route is deprecated: its schema says `deprecated: true` and lists `410 gone` (Problems.gone). */
    deprecation?: Deprecation
  }
}

const asArray = <T>(hooks: T | T[] | undefined): T[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks])

/** Refuses a deprecated route whose schema does not tell partners so: the document stays what the route does. */
function checkDeclared(route: RouteOptions): void {
  const schema = route.schema as { deprecated?: boolean; response?: Record<string, unknown> } | undefined
  if (schema?.deprecated !== true || !schema.response?.['410']) {
    throw new Error(`${route.method} ${route.url}: a deprecated route's schema needs deprecated: true and Problems.gone (410)`)
  }
}

/**
 * Every answer of a deprecated route carries `Deprecation`, `Sunset` and `Link`; from its sunset
 * date on, it answers `410 gone` and runs nothing else.
 */
export default fp(async (app) => {
  app.addHook('onRoute', (route) => {
    const deprecation = route.config?.deprecation
    if (!deprecation) return
    checkDeclared(route)
    const headers = {
      deprecation: `@${Math.floor(deprecation.deprecatedAt.getTime() / 1000)}`,
      sunset: deprecation.sunsetAt.toUTCString(),
      link: `<${deprecation.replacement}>; rel="deprecation"; type="text/html"`,
    }
    const gone: onRequestHookHandler = async () => {
      if (Date.now() >= deprecation.sunsetAt.getTime()) throw problem(410, 'gone', `This operation was removed on ${headers.sunset}.`)
    }
    const announce: onSendHookHandler = async (_request: FastifyRequest, reply: FastifyReply, payload) => {
      void reply.headers(headers)
      return payload
    }
    route.onRequest = [gone, ...asArray(route.onRequest)]
    route.onSend = [announce, ...asArray(route.onSend)]
  })
})
