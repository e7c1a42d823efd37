import { SerializerSelector, type SerializerFactory } from '@fastify/fast-json-stringify-compiler'

/**
 * Fastify's own response serializers (fast-json-stringify, same options and shared schemas), each
 * compiled when its route first answers with that status rather than at start: compiling all of
 * them up front (every route × every documented status) was about a quarter of the start-up time,
 * and most error statuses are rarely or never answered.
 */
export const buildLazySerializers: SerializerFactory = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options)
  return (route) => {
    let serialize: ((document: unknown) => string) | undefined
    return (document) => {
      serialize ??= compile(route)
      return serialize(document)
    }
  }
}
