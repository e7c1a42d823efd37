import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/**
 * Holds the service to its published OpenAPI document: every answer a test app gives (through
 * `inject` or the network) is checked against `/docs/json` – the status is one the operation
 * documents, the media type one that status documents, the body valid against that schema, each
 * header documented as required present, and a problem's `code` one of the codes that status documents. The
 * test setup (test/helpers/conformance-setup.ts) fails a test whose answers broke the document.
 */

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020

interface MediaObject {
  schema?: object
  examples?: Record<string, { value?: { code?: string } }>
}
interface ResponseObject {
  content?: Record<string, MediaObject>
  headers?: Record<string, unknown>
}
interface OpenApiDocument {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>
}

interface Answer {
  method: string
  /** The route pattern (`/api/company/v1/:company_role_id/…`); undefined for an unknown path. */
  route: string | undefined
  url: string
  status: number
  headers: Record<string, unknown>
  body: string | undefined
}

/** A compiled view of one document: validators per response media type, made on first use. */
class DocumentChecker {
  private readonly ajv: Ajv2020
  private readonly validators = new Map<string, ValidateFunction>()

  constructor(private readonly document: OpenApiDocument) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true })
    addFormats(this.ajv)
    // The whole document under one id, so that `#/components/schemas/…` resolves inside it.
    this.ajv.addSchema(document as object, 'openapi')
  }

  private validator(pointer: string): ValidateFunction {
    let validate = this.validators.get(pointer)
    if (!validate) this.validators.set(pointer, (validate = this.ajv.compile({ $ref: `openapi#${pointer}` })))
    return validate
  }

  /** Why the answer breaks the document, or undefined. */
  violation(answer: Answer): string | undefined {
    if (answer.route === undefined) return undefined
    // The route as declared (the webhook with its trailing slash), else without the slash.
    const declared = answer.route.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
    const path = declared in this.document.paths ? declared : declared.replace(/(.)\/$/, '$1')
    const method = answer.method === 'HEAD' ? 'get' : answer.method.toLowerCase()
    const operation = this.document.paths[path]?.[method]
    if (!operation) return path.startsWith('/docs') ? undefined : `${method.toUpperCase()} ${path} is not in the document`
    const response = operation.responses[String(answer.status)]
    if (!response) return `${answer.status} is not a status ${method.toUpperCase()} ${path} documents`
    for (const [header, object] of Object.entries(response.headers ?? {})) {
      // Only the headers documented as always sent: `Idempotent-Replayed` is on replays alone.
      if ((object as { required?: boolean }).required && answer.headers[header.toLowerCase()] === undefined) {
        return `${answer.status} without its documented ${header} header`
      }
    }
    const content = response.content
    const body = answer.method === 'HEAD' ? '' : (answer.body ?? '')
    if (!content) return body === '' ? undefined : `${answer.status} documents no body, but one was sent`
    const mediaType =
      String(answer.headers['content-type'] ?? '')
        .split(';')[0]
        ?.trim() ?? ''
    const media = content[mediaType]
    if (!media) return `${answer.status} sent ${mediaType || 'no media type'}; documented: ${Object.keys(content).join(', ')}`
    if (answer.method === 'HEAD') return undefined
    let value: unknown
    try {
      value = JSON.parse(body)
    } catch {
      return `${answer.status} body is not JSON`
    }
    const pointer = `/paths/${escape(path)}/${method}/responses/${answer.status}/content/${escape(mediaType)}/schema`
    const validate = this.validator(pointer)
    if (!validate(value)) return `${answer.status} body breaks its schema: ${this.ajv.errorsText(validate.errors)}`
    const code = (value as { code?: unknown }).code
    if (mediaType === 'application/problem+json') {
      const codes = Object.values(media.examples ?? {}).map((example) => example.value?.code)
      if (!codes.includes(code as string)) return `${answer.status} ${String(code)} is not a code this status documents (${codes.join(', ')})`
    }
    return undefined
  }
}

const escape = (segment: string): string => segment.replace(/~/g, '~0').replace(/\//g, '~1')

const checkers = new Map<string, DocumentChecker>()
const violations: string[] = []

function checkerOf(app: FastifyInstance): DocumentChecker {
  const document = app.swagger() as unknown as OpenApiDocument
  const key = JSON.stringify(document)
  let checker = checkers.get(key)
  if (!checker) checkers.set(key, (checker = new DocumentChecker(document)))
  return checker
}

/** Records every answer of `app` for the conformance check (call before `app.ready()`). */
export function recordConformance(app: FastifyInstance): void {
  let checker: DocumentChecker | undefined
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    // Swagger UI's files are streams and buffers, not operations of the document.
    if (typeof payload !== 'string' && payload !== null && payload !== undefined) return payload
    checker ??= checkerOf(app)
    const answer: Answer = {
      method: request.method,
      route: request.routeOptions.url,
      url: request.url,
      status: reply.statusCode,
      headers: reply.getHeaders(),
      // Fastify sends no body with a 204, whatever the serializer made of `null`.
      body: typeof payload === 'string' && reply.statusCode !== 204 ? payload : undefined,
    }
    const violation = checker.violation(answer)
    if (violation) violations.push(`${answer.method} ${answer.url}: ${violation}`)
    return payload
  })
}

/** The violations recorded since the last call, which forgets them. */
export function takeViolations(): string[] {
  return violations.splice(0)
}
