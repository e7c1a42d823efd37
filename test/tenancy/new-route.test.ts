import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import { jsonArrayFrom } from 'kysely/helpers/postgres'
import { Uuid } from '../../schemas/common.js'
import { BEARER_PROBLEMS, invalid, jsonResponse, Problems, routeResponses, when, withExample } from '../../schemas/responses.js'
import { companyRoute } from '../../src/tenancy/routes.js'
import { DEMO } from '../helpers/app.js'
import { describeHostileInput } from '../reliability/hostile/suite.js'
import { describeOrderOfChecks } from './order-of-checks.js'

/*
 * A route added to the app is covered by the order-of-checks and hostile-input suites without
 * editing them: a throwaway company read, its declaration and data query and nothing else, is
 * among the routes both suites run (their test names show it).
 */

const Account = Type.Object({ id: Uuid, bank_code: Type.String() })

const throwawayRead: FastifyPluginAsync = async (app) => {
  app.route(
    companyRoute({
      method: 'GET',
      url: '/api/company/v1/:company_role_id/throwaway-bank-accounts',
      permission: 'bank_accounts',
      schema: {
        operationId: 'throwawayBankAccounts',
        tags: ['company'],
        summary: "The company's bank accounts (a test's throwaway route)",
        params: Type.Object({ company_role_id: withExample(Uuid, DEMO.roles.acmeSeller) }),
        response: routeResponses({ 200: jsonResponse('The accounts', Type.Array(Account), {}) }, [
          invalid({ company_role_id: ['Must be a valid uuid.'] }, 'A path id is not a UUID'),
          ...BEARER_PROBLEMS,
          when(Problems.permissionDenied, 'The membership lacks the `bank_accounts` permission'),
          when(Problems.notFound, 'Not a member of `company_role_id`'),
        ]),
      },
      read: (db, scope) =>
        db.selectNoFrom((eb) =>
          jsonArrayFrom(
            eb
              .selectFrom('bank_accounts')
              .select(['id', 'bank_code'])
              .where('company_id', '=', scope.member.companyId)
              .where('removed_at', 'is', null)
              .orderBy('id'),
          ).as('accounts'),
        ),
      handler: async (_request, _reply, { data }) => data?.accounts ?? [],
    }),
  )
}

await describeOrderOfChecks(throwawayRead)
await describeHostileInput(throwawayRead, ['company'])
