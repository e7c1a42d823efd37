import type { FastifyPluginAsync } from 'fastify'
import { describe, expect, it } from 'vitest'
import { userRoute } from '../../src/tenancy/routes.js'
import { buildTestApp } from '../helpers/app.js'

/*
 * The start-up check finds a company role id wherever a schema can hold one: under every keyword that
 * holds subschemas, and under each header spelling. Each case is refused naming its route and the
 * place; route-declarations.test.ts has the common forms, these are the rest of the list.
 * (prefixItems and dependentSchemas are not here: Fastify's draft-07 validator refuses them first.)
 */

const uuid = { type: 'string', format: 'uuid' }
const roleId = { type: 'object', properties: { company_role_id: uuid } }
const leaked = async () => ({ secret: 'leaked' })

async function refusal(routes: FastifyPluginAsync): Promise<string> {
  try {
    const app = await buildTestApp({}, { extraRoutes: routes })
    await app.close()
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('the app started')
}

const bodies: [string, Record<string, unknown>][] = [
  ['additionalProperties', { type: 'object', additionalProperties: roleId }],
  ['allOf', { allOf: [{ type: 'object' }, roleId] }],
  ['oneOf', { oneOf: [{ type: 'null' }, roleId] }],
  ['not', { type: 'object', not: roleId }],
  ['if', { if: roleId, then: { type: 'object' } }],
  ['then', { if: { type: 'object' }, then: roleId }],
  ['else', { if: { type: 'string' }, else: roleId }],
  ['contains', { type: 'array', contains: roleId }],
  // One pattern of two declares it: enough.
  ['patternProperties', { type: 'object', patternProperties: { '^a': { type: 'string' }, '^f': roleId } }],
  ['a property of a property', { type: 'object', properties: { filter: roleId } }],
]

describe('a company role id under any subschema keyword of a body stops the start', () => {
  for (const [keyword, body] of bodies) {
    it(keyword, async () => {
      const url = `/throwaway/by-${keyword.replaceAll(' ', '-')}`
      const message = await refusal(async (app) => void app.route(userRoute({ method: 'POST', url, schema: { body }, handler: leaked })))
      expect(message).toBe(
        `refusing to start: POST ${url} takes company_role_id in its body but is not declared with companyRoute() and {company_role_id} in its path (src/tenancy/routes.ts)`,
      )
    })
  }
})

describe('each header spelling of a company role id stops the start', () => {
  for (const header of ['X-Company-Role-Id', 'company_role_id', 'COMPANY-ROLE-ID']) {
    it(header, async () => {
      const message = await refusal(
        async (app) =>
          void app.route(
            userRoute({
              method: 'GET',
              url: '/throwaway/by-header',
              schema: { headers: { type: 'object', properties: { [header]: uuid } } },
              handler: leaked,
            }),
          ),
      )
      expect(message).toContain('GET /throwaway/by-header takes company_role_id in its headers')
    })
  }

  it('a header that only ends in company-role-id is not one (xx-, partner-)', async () => {
    const app = await buildTestApp(
      {},
      {
        extraRoutes: async (app) =>
          void app.route(
            userRoute({
              method: 'GET',
              url: '/throwaway/other-headers',
              schema: { headers: { type: 'object', properties: { 'Xx-Company-Role-Id': uuid, 'Partner-Company-Role-Id': uuid } } },
              handler: leaked,
            }),
          ),
      },
    )
    await app.close()
  })
})

describe('a schema whose subschemas hold no company role id starts', () => {
  it('patternProperties and additionalProperties of other properties', async () => {
    const body = {
      type: 'object',
      patternProperties: { '^note_': { type: 'string' }, '^amount_': { type: 'object', properties: { cents: { type: 'integer' } } } },
      additionalProperties: { type: 'object', properties: { partner_company_role_id: uuid } },
    }
    const app = await buildTestApp(
      {},
      { extraRoutes: async (app) => void app.route(userRoute({ method: 'POST', url: '/throwaway/notes', schema: { body }, handler: leaked })) },
    )
    await app.close()
  })
})
