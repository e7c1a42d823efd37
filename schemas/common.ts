import { Type, type Static, type TSchema } from '@sinclair/typebox'

export const Uuid = Type.String({ format: 'uuid', description: 'UUID' })
export const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 timestamp in UTC' })
export const DateOnly = Type.String({ format: 'date', description: 'YYYY-MM-DD' })
/**
 * `schema` or null. A schema with one `type` becomes a type list (`["string", "null"]`): the
 * response serializer then tells the two apart with a type check, where an `anyOf` made it
 * validate every value against each branch (formats included) on every response.
 */
export function Nullable<T extends TSchema>(schema: T) {
  if (typeof schema.type !== 'string') return Type.Union([schema, Type.Null()])
  // Only the JSON Schema keywords: TypeBox's own (symbol) keys would describe the non-null schema.
  return Type.Unsafe<Static<T> | null>({ ...Object.fromEntries(Object.entries(schema)), type: [schema.type, 'null'] })
}

/** One of some strings, as a plain `enum`: one clear message for a wrong value, and a cheap check in responses. */
export const StringEnum = <const T extends readonly string[]>(values: T, options: { description?: string } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options })

/** RFC 9457 problem details, with DRF's `detail` and a stable machine `code`. */
export const Problem = Type.Object(
  {
    type: Type.String({ description: 'URI naming the problem type: `urn:problem:<code>`' }),
    title: Type.String({ description: 'Short summary of the HTTP status' }),
    status: Type.Integer({ description: 'The HTTP status, repeated' }),
    detail: Type.String({ description: 'Human-readable explanation' }),
    code: Type.String({ description: 'Stable machine-readable error code' }),
    errors: Type.Optional(
      Type.Record(Type.String(), Type.Array(Type.String()), {
        description: 'With `invalid`: the messages per field path (`email`, `document.key`, `non_field_errors`)',
      }),
    ),
  },
  { $id: 'Problem', additionalProperties: true, description: 'Problem details (application/problem+json)' },
)

/**
 * Put `[OPTIONAL_BODY]: true` in a route schema whose body may be left out: @fastify/swagger always
 * documents a body as required, and the docs plugin turns this mark into `required: false`.
 */
export const OPTIONAL_BODY = 'x-optional-body'
