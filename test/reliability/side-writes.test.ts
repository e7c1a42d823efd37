import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { bearer, DEMO, perTestTokens, useTestApp } from '../helpers/app.js'
import { testDatabase, workerSchema } from '../helpers/database.js'
import { customerUrl, isReplay, newKey, post, solicitationUrl } from '../idempotency/helpers.js'

const serverUrl = process.env.TEST_DATABASE_URL
const { roles } = DEMO

describe.runIf(!serverUrl)('side writes never change an answer', () => {
  it.skip('needs a real PostgreSQL: another connection locks the presence table', () => undefined)
})

describe.skipIf(!serverUrl)('side writes never change an answer (real PostgreSQL)', () => {
  const context = useTestApp()
  const tokenOf = perTestTokens(context)
  const db = async () => (await testDatabase()).db

  async function presenceFailures(): Promise<number> {
    const { values } = await context.app.metrics.sideWriteFailures.get()
    return values.find((value) => value.labels.write === 'presence')?.value ?? 0
  }

  it('answers committed writes 201 and reads 200 while the presence table is locked, and counts the failed presence writes', async () => {
    const alice = await tokenOf('alice@acme.example')
    const bob = await tokenOf('bob@beta.example')
    const failuresBefore = await presenceFailures()
    const holder = new pg.Client({ connectionString: serverUrl, options: `-c search_path=${workerSchema()}` })
    await holder.connect()
    const keyed = { customer: newKey(), solicitation: newKey() }
    const ids = { keyed: randomUUID(), unkeyed: randomUUID() }
    try {
      await holder.query('BEGIN')
      await holder.query('LOCK TABLE company_role_presence IN ACCESS EXCLUSIVE MODE')
      const started = Date.now()
      const [customerKeyed, customerUnkeyed, solicitationKeyed, solicitationUnkeyed, read] = await Promise.all([
        post(context.app, customerUrl(ids.keyed), alice, { name: 'Locked Keyed', tax_id: '11444777000161' }, keyed.customer),
        post(context.app, customerUrl(ids.unkeyed), alice, { name: 'Locked Unkeyed', tax_id: '11222333000262' }),
        post(context.app, solicitationUrl(roles.acmeSeller), bob, { document_types: ['balance_sheet'] }, keyed.solicitation),
        post(context.app, solicitationUrl(roles.gammaSeller), bob, { document_types: ['balance_sheet'] }),
        context.app.inject({
          method: 'GET',
          url: `/api/company/v1/${roles.betaBuyer}/buyer/check-documents/${roles.acmeSeller}`,
          headers: bearer(bob),
        }),
      ])
      expect([customerKeyed, customerUnkeyed, solicitationKeyed, solicitationUnkeyed].map((response) => response.statusCode)).toEqual([
        201, 201, 201, 201,
      ])
      expect(read.statusCode).toBe(200)
      // The presence writes gave up on the lock (PRESENCE_LOCK_TIMEOUT_MS), each once per role, and were counted.
      await context.app.presence.settled()
      expect(Date.now() - started).toBeLessThan(3_000)
      expect(await presenceFailures()).toBeGreaterThanOrEqual(failuresBefore + 2)
    } finally {
      await holder.query('ROLLBACK')
      await holder.end()
    }
    const customers = await (await db()).selectFrom('customers').select('id').where('id', 'in', [ids.keyed, ids.unkeyed]).execute()
    expect(customers).toHaveLength(2)
    const solicitations = await (
      await db()
    )
      .selectFrom('document_solicitations')
      .select('seller_company_role_id')
      .where('status', '=', 'open')
      .execute()
    expect(solicitations.map((row) => row.seller_company_role_id).sort()).toEqual([roles.acmeSeller, roles.gammaSeller].sort())
    // A retry of the keyed solicitation replays its 201, never 409 solicitation_already_open.
    const retry = await post(context.app, solicitationUrl(roles.acmeSeller), bob, { document_types: ['balance_sheet'] }, keyed.solicitation)
    expect([retry.statusCode, isReplay(retry)]).toEqual([201, true])
  })
})
