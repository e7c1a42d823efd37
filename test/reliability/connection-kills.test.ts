import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiClient, type FetchInit, type FetchResponse } from '../../packages/client/src/index.js'
import { cnpjCheckDigits } from '../../src/lib/tax-id.js'
import { DEMO, DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import { resetDatabase, testDatabase, workerSchema } from '../helpers/database.js'
import { startInstance, type Instance } from '../helpers/instances.js'

/**
 * Issue 32: every service connection ended every ~150 ms while partners send keyed writes (routes 5
 * and 11) to two instances, retrying as the client package (packages/client) does, with some answers lost on
 * the way back. Each operation must run exactly once, and its work, its key and its answer commit
 * together.
 */
const serverUrl = process.env.TEST_DATABASE_URL
const { roles } = DEMO

const OPERATIONS_PER_ROUTE = 200
const CONCURRENCY = 16
const KILL_EVERY_MS = 150
/** Answers lost on the way back (the service answered; the client sees a network error). */
const LOST_ANSWER_RATE = 0.05

const taxId = (prefix: string, n: number): string => {
  const base = `${prefix}${String(n).padStart(8, '0')}`
  return `${base}${cnpjCheckDigits(base)}`
}

interface Operation {
  route: '5' | '11'
  key: string
  path: string
  params: Record<string, string>
  body: Record<string, unknown>
  token: string
  /** Every answer the service gave (lost ones included): status, replayed, problem code. */
  answers: Array<{ status: number; replayed: boolean; code: string | undefined; lost: boolean }>
  final?: number
}

/** Sellers of their own for route 5: one open solicitation per buyer and seller, so one seller per operation. */
async function makeSellers(count: number): Promise<string[]> {
  const { db } = await testDatabase()
  const sellers = Array.from({ length: count }, (_, n) => ({ company: randomUUID(), role: randomUUID(), taxId: taxId('KSEL', n) }))
  await db
    .insertInto('companies')
    .values(sellers.map((seller, n) => ({ id: seller.company, name: `Kill Seller ${n}`, tax_id: seller.taxId })))
    .execute()
  await db
    .insertInto('company_roles')
    .values(sellers.map((seller) => ({ id: seller.role, company_id: seller.company, role: 'seller' as const })))
    .execute()
  return sellers.map((seller) => seller.role)
}

const customerPath = (id: string) => ({
  path: `/api/company/v1/${roles.acmeSeller}/customers/${id}`,
  params: { company_role_id: roles.acmeSeller, id },
})

describe.runIf(!serverUrl)('keyed writes while every service connection is killed', () => {
  it.skip('needs a real PostgreSQL (pg_terminate_backend)', () => undefined)
})

describe.skipIf(!serverUrl)('keyed writes while every service connection is killed (real PostgreSQL, two instances)', () => {
  const applicationName = `kills-${workerSchema()}`
  let instances: Instance[] = []

  beforeAll(async () => {
    await testDatabase()
    await resetDatabase()
    const url = new URL(serverUrl!)
    url.searchParams.set('application_name', applicationName)
    instances = [await startInstance({}, true, url.toString()), await startInstance({}, true, url.toString())]
  })
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.close()))
  })

  it('runs each operation exactly once, commits every acknowledged answer, replays lost ones and leaves no key without its answer', async () => {
    const { db } = await testDatabase()
    const [first, second] = instances.map((instance) => instance.app) as [FastifyInstance, FastifyInstance]
    const bob = (await obtainTokens(first, 'bob@beta.example', DEMO_PASSWORD)).access
    const alice = (await obtainTokens(second, 'alice@acme.example', DEMO_PASSWORD)).access
    const sellers = await makeSellers(OPERATIONS_PER_ROUTE)
    const operations: Operation[] = []
    for (let n = 0; n < OPERATIONS_PER_ROUTE; n++) {
      const base = { key: randomUUID(), answers: [] }
      operations.push({
        ...base,
        route: '5',
        path: `/api/company/v1/${roles.betaBuyer}/document-solicitation/${sellers[n]}`,
        params: { company_role_id: roles.betaBuyer, seller_id: sellers[n]! },
        body: { document_types: ['balance_sheet'] },
        token: bob,
      })
      operations.push({
        ...{ key: randomUUID(), answers: [] },
        route: '11',
        ...customerPath(randomUUID()),
        body: { name: `Kill Customer ${n}`, tax_id: taxId('KCUS', n) },
        token: alice,
      })
    }

    const figures = { attempts: 0, retries: 0, kills: 0, status503: 0, unknownOutcome503: 0, lost: 0, inUse409: 0, replays: 0 }
    let turn = 0
    /** The network between the partner and the two instances: each attempt to the next instance; some answers lost. */
    const transport =
      (operation: Operation) =>
      async (url: string, init: FetchInit): Promise<FetchResponse> => {
        figures.attempts++
        const app = turn++ % 2 === 0 ? first : second
        const answer = await app.inject({ method: init.method as 'POST', url: new URL(url).pathname, headers: init.headers, payload: init.body })
        const replayed = answer.headers['idempotent-replayed'] === 'true'
        const code = answer.headers['content-type']?.toString().includes('problem') ? answer.json<{ code?: string }>().code : undefined
        const lost = Math.random() < LOST_ANSWER_RATE
        operation.answers.push({ status: answer.statusCode, replayed, code, lost })
        if (answer.statusCode === 503) figures.status503++
        // A COMMIT whose answer was lost, and the database could not be asked after it.
        if (answer.statusCode === 503 && answer.body.includes('learn the outcome')) figures.unknownOutcome503++
        if (code === 'idempotency_key_in_use') figures.inUse409++
        if (replayed) figures.replays++
        if (lost) {
          figures.lost++
          throw new TypeError('fetch failed: the answer was lost on the way back')
        }
        const headers = new Headers()
        for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined) headers.set(name, String(value))
        return new Response(answer.body, { status: answer.statusCode, headers })
      }

    let killing = true
    const killer = (async () => {
      while (killing) {
        const { rows } = await sql<{ killed: number }>`
          SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS killed
            FROM pg_stat_activity WHERE application_name = ${applicationName} AND pid <> pg_backend_pid()`.execute(db)
        figures.kills += rows[0]?.killed ?? 0
        await new Promise((resolve) => setTimeout(resolve, KILL_EVERY_MS))
      }
    })()

    /** One operation as a partner sends it: the same key on every attempt, retried by the client package. */
    const perform = async (operation: Operation): Promise<number> => {
      const client = new ApiClient({
        baseUrl: 'http://service',
        tokens: { access: operation.token, refresh: '' },
        fetch: transport(operation),
        retry: { attempts: 12, baseDelayMs: 50, maxDelayMs: 300 },
        onRetry: () => void figures.retries++,
      })
      const input = { path: operation.params, body: operation.body, idempotencyKey: operation.key }
      const sent =
        operation.route === '5'
          ? client.send('requestSellerDocuments', input as Parameters<typeof client.send<'requestSellerDocuments'>>[1])
          : client.send('saveCustomer', input as Parameters<typeof client.send<'saveCustomer'>>[1])
      return sent.then(
        (answer) => answer.status,
        () => 0,
      )
    }
    const queue = [...operations]
    const send = async (): Promise<void> => {
      for (let operation = queue.shift(); operation; operation = queue.shift()) operation.final = await perform(operation)
    }
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, send))
    } finally {
      killing = false
      await killer
    }
    // Operations whose every attempt met a kill are sent again once the kills stop: nothing holds their key.
    const unfinished = operations.filter((operation) => operation.final !== 201)
    for (const operation of unfinished) operation.final = await perform(operation)
    console.log(
      `connection kills (issue 32): ${operations.length} operations, ${JSON.stringify({ ...figures, sentAgainAfterTheKills: unfinished.length })}`,
    )
    expect(figures.kills, 'the killer ended service connections').toBeGreaterThan(20)
    expect(figures.status503, 'kills reached requests').toBeGreaterThan(0)

    // Every operation got its 201 in the end.
    expect(
      operations.filter((operation) => operation.final !== 201).map((operation) => `${operation.route}: ${JSON.stringify(operation.answers)}`),
      'operations without a final 201',
    ).toEqual([])
    // Ran once: at most one answer from a run (not replayed) per operation, never the route's answer to a second run.
    const ranTwice = operations.filter(
      (operation) =>
        operation.answers.filter((answer) => answer.status === 201 && !answer.replayed).length > 1 ||
        operation.answers.some((answer) => answer.code === 'solicitation_already_open'),
    )
    expect(ranTwice.map((operation) => JSON.stringify(operation.answers))).toEqual([])
    // A retry after a lost 201 replays it.
    const afterLost = operations.flatMap((operation) => {
      const index = operation.answers.findIndex((answer) => answer.status === 201 && answer.lost)
      return index === -1 ? [] : operation.answers.slice(index + 1).filter((answer) => answer.status === 201)
    })
    expect(afterLost.length, 'lost 201s were retried').toBeGreaterThan(0)
    expect(afterLost.every((answer) => answer.replayed)).toBe(true)

    // In the database: one row of work per operation, written in the transaction that wrote its key's answer.
    const keys = await sql<{ status: number | null; answer: Buffer | null; xmin: string }>`
      SELECT status, answer, xmin::text AS xmin FROM idempotency_keys`.execute(db)
    expect(keys.rows.filter((row) => row.status === null || row.answer === null)).toEqual([])
    expect(keys.rows).toHaveLength(operations.length)
    // A row names its key by a digest only (migration 0013): each work row's transaction wrote one key row.
    const keyXmins = new Set(keys.rows.map((row) => row.xmin))
    expect(keyXmins.size).toBe(operations.length)
    const solicitations = await sql<{ seller: string; xmin: string }>`
      SELECT seller_company_role_id AS seller, xmin::text AS xmin FROM document_solicitations
       WHERE buyer_company_role_id = ${roles.betaBuyer} AND seller_company_role_id = ANY(${sellers})`.execute(db)
    const customers = await sql<{ id: string; xmin: string; changed: boolean }>`
      SELECT id, xmin::text AS xmin, updated_at <> created_at AS changed FROM customers WHERE name LIKE 'Kill Customer %'`.execute(db)
    expect(solicitations.rows).toHaveLength(OPERATIONS_PER_ROUTE)
    expect(customers.rows).toHaveLength(OPERATIONS_PER_ROUTE)
    const workXmin = new Map<string, string>([
      ...solicitations.rows.map((row) => [`/api/company/v1/${roles.betaBuyer}/document-solicitation/${row.seller}`, row.xmin] as const),
      ...customers.rows.map((row) => [`/api/company/v1/${roles.acmeSeller}/customers/${row.id}`, row.xmin] as const),
    ])
    const apart = operations.filter((operation) => !keyXmins.has(workXmin.get(operation.path) ?? ''))
    expect(apart.map((operation) => operation.path)).toEqual([])
    expect(customers.rows.filter((row) => row.changed)).toEqual([])
  })
})
