import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { FuzzRequest } from './routes.js'

/** The statuses each operation of the OpenAPI document declares, by `METHOD /path/{param}`. */
export type Documented = Map<string, Set<number>>

/** Swagger UI's own routes are not in the document; their successes are these. */
const DOCS_SUCCESS = new Set([200, 302])

export async function documentedStatuses(app: FastifyInstance): Promise<Documented> {
  const response = await app.inject({ method: 'GET', url: '/docs/json' })
  if (response.statusCode !== 200) throw new Error(`/docs/json answered ${response.statusCode}`)
  const document = response.json<{ paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> }>()
  const documented: Documented = new Map()
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      // Keyed without a trailing slash, as requests name their operation (route 12 is documented with one).
      documented.set(`${method.toUpperCase()} ${path.replace(/(.)\/$/, '$1')}`, new Set(Object.keys(operation.responses ?? {}).map(Number)))
    }
  }
  return documented
}

function statusesOf(operation: string, documented: Documented): Set<number> {
  const statuses = documented.get(operation)
  if (!statuses) throw new Error(`the OpenAPI document has no operation ${operation}`)
  return statuses
}

function allowedSuccess(request: FuzzRequest, documented: Documented): Set<number> {
  if (request.operation === 'docs') return DOCS_SUCCESS
  if (request.operation === undefined) return new Set()
  return new Set([...statusesOf(request.operation, documented)].filter((status) => status < 400))
}

const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'

/** Why a response breaks docs/api.md §1, or undefined when it keeps it. */
export function contractViolation(
  request: FuzzRequest,
  response: LightMyRequestResponse,
  documented: Documented,
  secrets: readonly string[],
): string | undefined {
  const status = response.statusCode
  if (status >= 500) return `a ${status}`
  if (response.headers['x-request-id'] === undefined) return 'no X-Request-Id on the response'
  if (status < 400) {
    if (!request.mayPass) return `a ${status} for a request that must be refused`
    if (!allowedSuccess(request, documented).has(status)) return `${status} is not a success status the route documents`
    return undefined
  }
  if (request.matches && request.operation && !statusesOf(request.operation, documented).has(status)) {
    return `${status} is not an answer the operation documents`
  }
  if (response.headers['content-type'] !== PROBLEM_TYPE) return `content-type ${String(response.headers['content-type'])}`
  if (status === 401 && response.headers['www-authenticate'] !== 'Bearer realm="api"') return 'a 401 without WWW-Authenticate: Bearer realm="api"'
  const leaked = secrets.find((secret) => response.body.includes(secret))
  if (leaked !== undefined) return `the body repeats a secret of the request (${leaked.slice(0, 12)}…)`
  if (request.method === 'HEAD') return response.body === '' ? undefined : 'a body on a HEAD answer'
  return problemShapeViolation(status, response.body)
}

function problemShapeViolation(status: number, text: string): string | undefined {
  let body: Record<string, unknown>
  try {
    body = JSON.parse(text) as Record<string, unknown>
  } catch {
    return 'the body is not JSON'
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body is not an object'
  const { type, title, detail, code, errors } = body
  if (typeof type !== 'string' || type === '') return 'no type'
  if (typeof title !== 'string' || title === '') return 'no title'
  if (body.status !== status) return `body status ${String(body.status)} differs from the HTTP status`
  if (typeof detail !== 'string' || detail === '') return 'no detail'
  if (typeof code !== 'string' || !/^[a-z][a-z_]*$/.test(code)) return `code ${String(code)} is not a machine word`
  if (code === 'invalid') {
    if (status !== 400) return `code invalid with status ${status}`
    if (typeof errors !== 'object' || errors === null || Array.isArray(errors) || Object.keys(errors).length === 0) {
      return 'a 400 invalid without an errors object'
    }
    for (const [path, messages] of Object.entries(errors)) {
      if (!Array.isArray(messages) || messages.length === 0 || !messages.every((message) => typeof message === 'string' && message !== '')) {
        return `errors.${path} is not a list of messages`
      }
    }
  }
  return undefined
}
