import type { FastifyRequest } from 'fastify'

/**
 * For routes whose body fields are all optional: a POST without a body (and without a
 * Content-Type) reaches validation as `{}`, as DRF read it, instead of failing "must be object".
 */
export async function emptyBodyAsObject(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) request.body = {}
}
