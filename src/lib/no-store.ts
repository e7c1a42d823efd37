import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'

/**
 * onRequest hook of the routes that hand out tokens: no cache may keep their answers (RFC 6749
 * §5.1). Set before the handler runs, so that error answers carry it too.
 */
export function noStore(_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  reply.header('cache-control', 'no-store')
  reply.header('pragma', 'no-cache')
  done()
}
