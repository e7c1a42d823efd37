import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runPartner, syncCustomer } from '../../examples/client/partner.js'
import { confirmationPath } from '../../src/registration/confirmation.js'
import { findUserForLink } from '../../src/registration/repository.js'
import { DEMO, DEMO_PASSWORD, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'
import { parseHttpFile, resolveHttpFileText } from '../helpers/http-file.js'
import { freePort, waitForPort } from '../helpers/ports.js'
import { TEST_SECRETS } from '../helpers/secrets.js'

/**
 * Every call of docs/api.http and of the partner example (examples/client) through Stoplight Prism
 * (a devDependency), a validating proxy built from the document the service publishes: with
 * `--errors` it answers a request or a response the document does not describe (or a path it does
 * not list) with its own problem instead of the service's answer, which fails the test.
 */

const ctx = useTestApp()
const PRISM = path.resolve('node_modules/@stoplight/prism-cli/dist/index.js')
let prism: ChildProcess | undefined
let prismUrl = ''
let work = ''
const prismOutput: string[] = []

beforeAll(async () => {
  await ctx.app.listen({ port: 0, host: '127.0.0.1' })
  const service = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
  work = await mkdtemp(path.join(tmpdir(), 'prism-'))
  const document = path.join(work, 'openapi.json')
  await writeFile(document, (await ctx.app.inject({ method: 'GET', url: '/docs/json' })).body)
  const port = await freePort()
  prism = spawn(process.execPath, [PRISM, 'proxy', document, service, '--errors', '--host', '127.0.0.1', '--port', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  for (const stream of [prism.stdout, prism.stderr]) stream?.on('data', (chunk: Buffer) => prismOutput.push(String(chunk)))
  const exited = new Promise((resolve) => prism?.once('exit', resolve))
  await waitForPort(port, exited, () => prismOutput.join(''), 60_000)
  prismUrl = `http://127.0.0.1:${port}`
}, 90_000)

afterAll(async () => {
  prism?.kill()
  await rm(work, { recursive: true, force: true })
})

/** Prism's own answer (a violation, a path the document lacks) in place of the service's, as a message; else undefined. */
function violation(response: Response, body: string): string | undefined {
  const violations = response.headers.get('sl-violations')
  if (violations) return `sl-violations: ${violations}`
  if (/stoplight\.io\/prism\/errors/.test(body)) return body
  return undefined
}

describe('Prism, a validating proxy built from the OpenAPI document', () => {
  it('passes every call of docs/api.http, in order, request and response (route 10 with a link the command would print)', async () => {
    const { variables, requests } = parseHttpFile(await readFile('docs/api.http', 'utf8'))
    expect(requests).toHaveLength(12)
    const { db } = await testDatabase()
    const maria = await findUserForLink(db, 'maria@legacy.example')
    if (!maria) throw new Error('the demo data has no maria')
    // The substitutions a reader makes: the base URL, the deployment's webhook secret, route 10's printed link.
    const vars = { ...variables, base: prismUrl }
    const answers: Record<string, unknown> = {}
    const statuses: string[] = []
    for (const request of requests) {
      const url = resolveHttpFileText(request.url, vars, answers)
        .replace('/demo-esign-secret/', `/${TEST_SECRETS.ESIGN_WEBHOOK_SECRETS}/`)
        .replace(
          /\/api\/registration\/v1\/confirm-migration-account\/MTA0Mg\/PASTE-THE-TOKEN-HERE$/,
          confirmationPath(maria, TEST_SECRETS.LEGACY_SECRET_KEY),
        )
      const headers = request.headers.map(([name, value]) => [name, resolveHttpFileText(value, vars, answers)] as [string, string])
      const body = request.body ? resolveHttpFileText(request.body, vars, answers) : undefined
      const response = await fetch(url, { method: request.method, headers, ...(body === undefined ? {} : { body }) })
      const text = await response.text()
      expect(violation(response, text), `${request.title}\n${prismOutput.join('')}`).toBeUndefined()
      if (request.name) answers[request.name] = JSON.parse(text)
      statuses.push(`${request.title.split('.')[0]} ${response.status}`)
    }
    expect(statuses).toEqual(['1 200', '2 200', '3 200', '4 200', '5 201', '6 200', '7 200', '8 204', '9 200', '10 201', '11 201', '12 201'])
  })

  it('passes every call of the partner example, on the client package', async () => {
    const bob = { email: 'bob@beta.example', password: DEMO_PASSWORD }
    const run = await runPartner(prismUrl, bob, { sellerId: DEMO.roles.acmeSeller, titleId: DEMO.titles.t1 })
    expect(run.solicitation).toMatchObject({ documentTypes: ['balance_sheet'], replayed: false })
    const customer = { id: '7a1b2c3d-0000-4000-8000-000000000077', name: 'Partner Customer Ltda', tax_id: '11444777000161' }
    const saved = await syncCustomer(prismUrl, { email: 'alice@acme.example', password: DEMO_PASSWORD }, customer)
    expect(saved.saved.name).toBe(customer.name)
    expect(run.retries.concat(saved.retries)).toEqual([])
  })

  it('answers a path the document does not list with its own error (the check can fail)', async () => {
    const response = await fetch(`${prismUrl}/webhook/esign/${TEST_SECRETS.ESIGN_WEBHOOK_SECRETS}/extra`, { method: 'POST', body: '{}' })
    expect(violation(response, await response.text())).toMatch(/NO_PATH_MATCHED_ERROR/)
  })
})
