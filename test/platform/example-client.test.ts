import { readFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { runPartner } from '../../examples/client/partner.js'
import { clientTypes, CLIENT_TYPES } from '../../scripts/openapi-client.js'
import { DEMO, DEMO_PASSWORD, useTestApp } from '../helpers/app.js'

const ctx = useTestApp()

describe('the example client generated from /docs/json (examples/client)', () => {
  it('is generated from the document the service publishes now', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/docs/json' })).json<Record<string, unknown>>()
    const committed = await readFile(CLIENT_TYPES, 'utf8')
    // On failure: npm run openapi:client, and review the change of the API it shows.
    expect(committed).toBe(await clientTypes(document))
  })

  it('logs in, refreshes and reads routes 4, 7 and 9 over HTTP', async () => {
    await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = ctx.app.server.address() as AddressInfo
    const run = await runPartner(
      `http://127.0.0.1:${port}`,
      { email: 'bob@beta.example', password: DEMO_PASSWORD },
      { sellerId: DEMO.roles.acmeSeller, titleId: DEMO.titles.t1 },
    )
    expect(run).toEqual({
      companies: ['Fundo Beta FIDC'],
      buyerRoleId: DEMO.roles.betaBuyer,
      sellerComplete: false,
      missing: ['balance_sheet'],
      documents: ['invoice nf-1001.pdf (unsigned)', 'nfe_xml nf-1001.xml (unsigned)', 'assignment_contract cessao-nf-1001.pdf (pending)'],
    })
  })
})
