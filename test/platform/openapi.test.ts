import { readFile } from 'node:fs/promises'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { describe, expect, it } from 'vitest'
import { PROBLEM_CODES, type ProblemCode } from '../../schemas/problems.js'
import { DEMO_SECRETS } from '../../src/config.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, perTestTokens, useTestApp } from '../helpers/app.js'
import { TEST_SECRETS } from '../helpers/secrets.js'

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020

const ctx = useTestApp()
const tokenOf = perTestTokens(ctx)

interface Media {
  schema: object
  examples?: Record<string, { summary?: string; value: unknown }>
}
interface Operation {
  operationId?: string
  summary?: string
  tags?: string[]
  security?: unknown[]
  parameters?: { name: string; in: string; example?: unknown }[]
  requestBody?: { required?: boolean; content: Record<string, Media> }
  responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, Media> }>
}
interface Document {
  info: { description: string; version: string }
  servers?: { url: string; variables?: Record<string, { default: string }> }[]
  components: { securitySchemes: Record<string, { description?: string }> }
  paths: Record<string, Record<string, Operation>>
}

async function published(): Promise<Document> {
  const response = await ctx.app.inject({ method: 'GET', url: '/docs/json' })
  expect(response.statusCode).toBe(200)
  return response.json<Document>()
}

function operations(document: Document): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, operation]): [string, Operation] => [`${method.toUpperCase()} ${path}`, operation]),
  )
}

describe('the published OpenAPI document', () => {
  it('names, summarises and describes every operation and response', async () => {
    const document = await published()
    const ids = operations(document).map(([, operation]) => operation.operationId)
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true)
    expect(new Set(ids).size).toBe(ids.length)
    for (const [name, operation] of operations(document)) {
      expect(operation.summary, name).toBeTruthy()
      expect(operation.tags?.length, name).toBe(1)
      for (const [status, response] of Object.entries(operation.responses)) {
        expect(response.description, `${name} ${status}`).not.toBe('Default Response')
        expect(response.headers, `${name} ${status}`).toHaveProperty(['X-Request-Id', 'required'], true)
      }
    }
    expect(document.servers?.length).toBeGreaterThan(0)
  })

  it('documents every error as application/problem+json, with its headers and an example per code', async () => {
    for (const [name, operation] of operations(await published())) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue
        expect(Object.keys(response.content ?? {}), `${name} ${status}`).toEqual(['application/problem+json'])
        const media = response.content?.['application/problem+json']
        const codes = Object.values(media?.examples ?? {}).map((example) => (example.value as { code: string }).code)
        expect(codes.length, `${name} ${status}`).toBeGreaterThan(0)
        // Problem, with `code` an enum of exactly the codes this status documents (a client switches on them).
        expect(media?.schema, `${name} ${status}`).toEqual({
          allOf: [
            { $ref: '#/components/schemas/Problem' },
            { type: 'object', required: ['code'], properties: { code: expect.objectContaining({ type: 'string', enum: [...new Set(codes)] }) } },
          ],
        })
        for (const code of codes) expect(PROBLEM_CODES[code as ProblemCode], `${name} ${status} ${code}`).toBe(Number(status))
        for (const code of codes) expect(response.description, `${name} ${status}`).toContain(`\`${code}\``)
        if (status === '401') expect(response.headers).toHaveProperty(['WWW-Authenticate', 'required'], true)
        if (status === '429' || status === '503') expect(response.headers).toHaveProperty(['Retry-After', 'required'], true)
      }
      expect(operation.responses, name).toHaveProperty('500')
      expect(operation.responses, name).toHaveProperty('503')
    }
  })

  it('says what routes 1, 2, 8 and 10 really answer', async () => {
    const { paths } = await published()
    const codes = (operation: Operation | undefined, status: string) =>
      Object.values(operation?.responses[status]?.content?.['application/problem+json']?.examples ?? {}).map(
        (example) => (example.value as { code: string }).code,
      )
    for (const route of ['/api/auth/v1/token', '/api/auth/v1/login']) {
      expect(codes(paths[route]?.post, '401')).toEqual(['no_active_account'])
      expect(codes(paths[route]?.post, '429')).toEqual(['throttled', 'rate_limited']) // failed logins; the address's quota (docs/api.md, Limits)
    }
    const confirmation = paths['/api/registration/v1/confirm-migration-account/{uidb64}/{token}']?.post
    expect(codes(confirmation, '400')).toContain('invalid_link')
    expect(confirmation?.responses).not.toHaveProperty('401')
    const removal = paths['/api/company/v1/{company_role_id}/bank-account/{bank_account_id}']?.delete
    expect(Object.keys(removal?.responses ?? {})).toEqual(['204', '400', '401', '403', '404', '409', '429', '500', '503'])
    expect(removal?.requestBody).toBeUndefined()
  })

  it('has examples on every request body and success response, each valid against its schema', async () => {
    const document = await published()
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }))
    ajv.addSchema(document as object, 'openapi')
    const check = (pointer: string, examples: Media['examples'], where: string) => {
      expect(Object.keys(examples ?? {}).length, where).toBeGreaterThan(0)
      const validate = ajv.compile({ $ref: `openapi#${pointer}` })
      for (const [name, example] of Object.entries(examples ?? {})) {
        expect(validate(example.value), `${where} example ${name}: ${ajv.errorsText(validate.errors)}`).toBe(true)
      }
    }
    const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1')
    for (const [path, byMethod] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(byMethod)) {
        const base = `/paths/${escape(path)}/${method}`
        for (const parameter of operation.parameters ?? []) {
          if (parameter.in === 'path') expect(parameter.example, `${method} ${path} ${parameter.name}`).toBeDefined()
        }
        for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
          check(`${base}/requestBody/content/${escape(type)}/schema`, media.examples, `${method} ${path} body`)
        }
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const [type, media] of Object.entries(response.content ?? {})) {
            check(`${base}/responses/${status}/content/${escape(type)}/schema`, media.examples, `${method} ${path} ${status}`)
          }
        }
      }
    }
  })

  it("carries the version of package.json, CHANGELOG.md's latest release (issue 44: no unreleased number is published)", async () => {
    const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    expect((await published()).info.version).toBe(version)
    const changelog = await readFile(new URL('../../CHANGELOG.md', import.meta.url), 'utf8')
    const lastRelease = /^## \[([0-9]+\.[0-9]+\.[0-9]+)\] - \d{4}-\d{2}-\d{2}$/m.exec(changelog)?.[1]
    expect(version).toBe(lastRelease)
  })

  it('never echoes the Host header: /docs/json lists the serving host as the relative server first (issue 33, item 13)', async () => {
    for (const host of ['api.partner.test:8443', 'evil.example', 'evil.test/"><script>']) {
      const response = await ctx.app.inject({ method: 'GET', url: '/docs/json', headers: { host } })
      expect(response.body).not.toContain(host.split(/[:/]/)[0])
      const servers = response.json<Document>().servers ?? []
      expect(servers.map((server) => server.url)).toEqual(['/', 'http://localhost:3000', 'https://{host}'])
      expect(servers[2]?.variables?.host?.default).toBeTruthy()
    }
    // The document without a request (npm run openapi, dist/openapi.json) starts with an absolute
    // server, so that a client generated from it in Node can call it.
    const offline = ctx.app.swagger() as unknown as Document
    expect(offline.servers?.map((server) => server.url)).toEqual(['http://localhost:3000', 'https://{host}', '/'])
  })

  it('lists PUBLIC_BASE_URL alone when it is configured, whatever the Host header (issue 33, item 13)', async () => {
    const app = await buildTestApp({ PUBLIC_BASE_URL: 'https://api.platform.example/receivables/' })
    try {
      const response = await app.inject({ method: 'GET', url: '/docs/json', headers: { host: 'evil.example' } })
      expect(response.body).not.toContain('evil.example')
      expect(response.json<Document>().servers?.map((server) => server.url)).toEqual(['https://api.platform.example/receivables'])
    } finally {
      await app.close()
    }
  })

  it('tells a partner how to start: base URL, tokens, refresh, errors, idempotency, webhook', async () => {
    const document = await published()
    for (const topic of [
      'Base URL',
      '/api/auth/v1/token',
      'Bearer <access>',
      '/api/auth/v1/token/refresh',
      'application/problem+json',
      'idempotent',
      'Idempotency-Key',
      'Idempotent-Replayed',
      'Content-Hmac',
      'duplicate',
    ]) {
      expect(document.info.description).toContain(topic)
    }
    expect(document.components.securitySchemes.bearerAuth?.description).toContain('POST /api/auth/v1/token')
  })
})

/** Who may act for each demo company role the examples name. */
const ROLE_USERS: Record<string, string> = {
  [DEMO.roles.acmeSeller]: 'alice@acme.example',
  [DEMO.roles.betaBuyer]: 'bob@beta.example',
  [DEMO.roles.gammaSeller]: 'carol@gamma.example',
  [DEMO.roles.deltaSeller]: 'dave@delta.example',
  [DEMO.roles.deltaBuyer]: 'dave@delta.example',
}

describe('the examples of the document', () => {
  // Route 10's link is made from the time of sending, so no fixed example can stay valid.
  const skipped = new Set(['confirmMigratedAccount'])

  it('answer their documented success when sent to the service as they stand', async () => {
    const document = await published()
    const sent: string[] = []
    for (const [path, byMethod] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(byMethod)) {
        if (skipped.has(operation.operationId ?? '')) continue
        const values = Object.fromEntries((operation.parameters ?? []).map((parameter) => [parameter.name, String(parameter.example)]))
        // The example's webhook secret is the embedded demo's; the tests' service has a secret of its own.
        if (values.secret === DEMO_SECRETS.ESIGN_WEBHOOK_SECRETS) values.secret = TEST_SECRETS.ESIGN_WEBHOOK_SECRETS
        const url = path.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? '')
        const bodyExamples = Object.values(operation.requestBody?.content['application/json']?.examples ?? {})
        const payload = bodyExamples[0]?.value as Record<string, unknown> | undefined
        // A due date is today or later: the example's may have passed.
        if (payload && 'due_date' in payload) payload.due_date = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10)
        // The example's refresh token has long expired: a fresh one of the same user.
        if (payload && 'refresh' in payload) payload.refresh = (await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)).refresh
        const user = ROLE_USERS[values.company_role_id ?? ''] ?? 'alice@acme.example'
        const headers = operation.security?.length ? bearer(await tokenOf(user)) : {}
        const response = await ctx.app.inject({ method: method.toUpperCase(), url, headers, ...(payload ? { payload } : {}) })
        const success = Object.keys(operation.responses).filter((status) => Number(status) < 400)
        expect(success, `${method} ${url}: ${response.body}`).toContain(String(response.statusCode))
        sent.push(operation.operationId ?? '')
      }
    }
    expect(sent.length).toBe(operations(document).length - skipped.size)
  })

  it('log in with the password the bearer scheme names', async () => {
    const login = await ctx.app.inject({
      method: 'POST',
      url: '/api/auth/v1/token',
      payload: { email: 'alice@acme.example', password: DEMO_PASSWORD },
    })
    expect(login.statusCode).toBe(200)
    expect((await published()).components.securitySchemes.bearerAuth?.description).toContain(DEMO_PASSWORD)
  })
})
