import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { OPERATIONS } from '../../packages/client/src/index.js'
import { clientTypes, CLIENT_TYPES } from '../../scripts/openapi-client.js'
import { useTestApp } from '../helpers/app.js'

/** The client package is made from the document the service publishes, and covers its partner operations. */

const ctx = useTestApp()

type Operation = { operationId: string }

describe("the client package's types", () => {
  it('are generated from the document the service publishes now (npm run client:types)', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/docs/json' })).json<Record<string, unknown>>()
    // On failure: npm run client:types, and review the change of the API it shows.
    expect(await readFile(CLIENT_TYPES, 'utf8')).toBe(await clientTypes(document))
  })

  it("call every operation of the document but the provider's webhook and the probes, with the document's method and path", async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/docs/json' })).json<{ paths: Record<string, Record<string, Operation>> }>()
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => [operation.operationId, `${method.toUpperCase()} ${path}`]),
    )
    const notForPartners = ['receiveEsignNotification', 'checkLiveness', 'checkReadiness']
    expect(Object.fromEntries(Object.entries(OPERATIONS).map(([id, spec]) => [id, `${spec.method} ${spec.path}`]))).toEqual(
      Object.fromEntries(documented.filter(([id]) => !notForPartners.includes(id ?? ''))),
    )
  })
})

describe("the client package's version", () => {
  it("is the API's (package.json), which its types describe", async () => {
    const version = async (file: string) =>
      (JSON.parse(await readFile(new URL(`../../${file}`, import.meta.url), 'utf8')) as { version: string }).version
    expect(await version('packages/client/package.json')).toBe(await version('package.json'))
  })
})
