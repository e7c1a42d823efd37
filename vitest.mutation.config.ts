import { defineConfig, mergeConfig } from 'vitest/config'
import base from './vitest.config.js'

/*
 * The tests `npm run test:mutation` (stryker.config.mjs) runs against each mutant: those that guard
 * src/tenancy, src/auth, src/idempotency and src/webhooks through HTTP on the embedded database.
 * Route 4's and route 5's tests are in: route 5 records the admitted user as who asked, the one
 * place a handler reads the principal's id. Left out: the other domains' tests, which reach these folders mostly through start-up and login
 * and would multiply the run time for few kills.
 */
export default mergeConfig(
  base,
  defineConfig({
    test: {
      include: [
        'test/tenancy/**/*.test.ts',
        'test/auth/**/*.test.ts',
        'test/idempotency/**/*.test.ts',
        'test/webhooks/**/*.test.ts',
        'test/company/user-companies.test.ts',
        'test/company/solicitation.test.ts',
      ],
    },
  }),
)
