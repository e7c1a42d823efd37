import type { FastifyReply } from 'fastify'

/**
 * Sends a body that is already JSON text (built by the database in the shape of the route's
 * response schema): Fastify passes a string with a JSON media type through unchanged, skipping the
 * schema's serializer and the preSerialization hooks. The route's tests check such bodies against
 * the schema.
 */
export function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json)
}
