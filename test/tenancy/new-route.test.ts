import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import { type Kysely } from 'kysely'
import { jsonArrayFrom } from 'kysely/helpers/postgres'
import { describe, expect, it } from 'vitest'
import type { Database } from '../../db/types.js'
import { Uuid } from '../../schemas/common.js'
import { BEARER_PROBLEMS, invalid, jsonResponse, Problems, routeResponses, when, withExample } from '../../schemas/responses.js'
import { MemoryCounterStore } from '../../src/auth/throttle/memory-counter-store.js'
import type { Scope } from '../../src/tenancy/scoped-statement.js'
import { companyRoute } from '../../src/tenancy/routes.js'
import { bearer, buildTestApp, DEMO, DEMO_PASSWORD, obtainTokens, useTestApp } from '../helpers/app.js'
import { exerciseRoutes } from '../platform/plan-check.js'
import { describeHostileInput } from '../reliability/hostile/suite.js'
import { describeOrderOfChecks } from './order-of-checks.js'
import { useLoggedSchema } from '../helpers/logged-schema.js'

/*
 * CONTRIBUTING.md's "How to add a route", proven: a route 13 written the documented way (its
 * schema, its query, its declaration, each below where src/ would keep it, and this one test file)
 * is run by the registry-driven suites without editing them: the order of checks, the hostile
 * input, and the plan check's calls of every route with its examples. It is registered on the
 * test app only (`extraRoutes`), through the same registry as the product's twelve.
 */

// schemas/<domain>.ts: the wire format, with examples of demo data its caller can see.
const Account = Type.Object({ id: Uuid, bank_code: Type.String() })
const route13Schema = {
  operationId: 'route13BankAccounts',
  tags: ['company'],
  summary: "The company's bank accounts (route 13, a test's)",
  params: Type.Object({ company_role_id: withExample(Uuid, DEMO.roles.acmeSeller) }),
  response: routeResponses({ 200: jsonResponse('The accounts', Type.Array(Account), {}) }, [
    invalid({ company_role_id: ['Must be a valid uuid.'] }, 'A path id is not a UUID'),
    ...BEARER_PROBLEMS,
    when(Problems.permissionDenied, 'The membership lacks the `bank_accounts` permission'),
    when(Problems.notFound, 'Not a member of `company_role_id`'),
  ]),
}

// src/<domain>/repository.ts: the data query, run in the admitting statement for a member only.
const bankAccountsRead = (db: Kysely<Database>, scope: Scope<{ company_role_id: string }>) =>
  db.selectNoFrom((eb) =>
    jsonArrayFrom(
      eb
        .selectFrom('bank_accounts')
        .select(['id', 'bank_code'])
        .where('company_id', '=', scope.member.companyId)
        .where('removed_at', 'is', null)
        .orderBy('id'),
    ).as('accounts'),
  )

// src/<domain>/routes.ts: the declaration, which wires the route's whole way (src/tenancy/routes.ts).
const route13: FastifyPluginAsync = async (app) => {
  app.route(
    companyRoute({
      method: 'GET',
      url: '/api/company/v1/:company_role_id/route-13/bank-accounts',
      permission: 'bank_accounts',
      schema: route13Schema,
      read: bankAccountsRead,
      handler: async (_request, _reply, { data }) => data.accounts,
    }),
  )
}

await describeOrderOfChecks(route13)
await describeHostileInput(route13, ['company'])

describe('route 13 itself', () => {
  const ctx = useTestApp({}, { extraRoutes: route13 })

  it("answers a member with their company's accounts, from the statement that admitted them", async () => {
    const { access } = await obtainTokens(ctx.app, 'alice@acme.example', DEMO_PASSWORD)
    const response = await ctx.app.inject({
      method: 'GET',
      url: `/api/company/v1/${DEMO.roles.acmeSeller}/route-13/bank-accounts`,
      headers: bearer(access),
    })
    expect(response.statusCode).toBe(200)
    expect(response.json<unknown[]>().length).toBeGreaterThan(0)
  })
})

const databaseUrl = process.env.TEST_DATABASE_URL

describe.skipIf(!databaseUrl)("the plan check's machinery calls route 13 with its examples and records its read (real PostgreSQL)", () => {
  const database = useLoggedSchema(databaseUrl!, 'route13')
  const { log } = database

  it('finds no problem, and route 13 ran its read statement (test/platform/plans.test.ts plans every such statement at volume)', async () => {
    const app = await buildTestApp({}, { database: database.handle, counterStore: new MemoryCounterStore(), extraRoutes: route13 })
    try {
      log.clear()
      const problems = await exerciseRoutes(app, database.handle.db, log, { only: (operation) => operation.includes('/route-13/') })
      expect(problems, problems.join('\n')).toEqual([])
      const ranBy = [...log.statements.values()].flatMap((recorded) => [...recorded.routes])
      expect(ranBy).toContain('GET /api/company/v1/{company_role_id}/route-13/bank-accounts')
    } finally {
      await app.close()
    }
  })
})
