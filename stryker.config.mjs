// StrykerJS on the folders that decide who may do what (docs/testing.md), one scope at a time:
// `npm run test:mutation` runs every scope (scripts/mutation.mjs), `npm run test:mutation -- auth`
// one. Each scope mutates one folder and runs the tests that guard it, so that a surviving mutant
// costs the tests of its folder, not the whole suite. Incremental per scope: a rerun tests only the
// mutants whose code or covering tests changed since reports/mutation/<scope>.incremental.json (a
// cache, not committed).
import process from 'node:process'

/** Each scope: the folder it mutates and the test files that guard it (globs). */
export const scopes = {
  tenancy: {
    mutate: 'src/tenancy/**/*.ts',
    tests: [
      'test/tenancy/*.test.ts',
      'test/auth/access.test.ts',
      'test/auth/principal-in-statement.test.ts',
      'test/auth/login.test.ts',
      'test/company/*.test.ts',
      'test/marketplace/*.test.ts',
      // The constructs' hooks that run only with a real server: replica admission, presence failures, a keyed request abandoned.
      'test/platform/replica-admission.test.ts',
      // The replica rule (src/tenancy/replica-reads.ts): a replica down, access taken away.
      'test/platform/replica-reads.test.ts',
      'test/platform/revocation-on-replica.test.ts',
      'test/reliability/side-writes.test.ts',
      'test/idempotency/handler-timeout.test.ts',
    ],
  },
  // The token code (issue, verify, families), in src/auth when mutation testing was first asked for.
  tokens: {
    mutate: 'src/tokens/**/*.ts',
    tests: ['test/auth/*.test.ts', 'test/registration/*.test.ts'],
  },
  auth: {
    mutate: 'src/auth/**/*.ts',
    tests: [
      'test/auth/*.test.ts',
      'test/registration/*.test.ts',
      // The address limit of webhook secrets, the legacy (Django) hashes off the event loop.
      'test/webhooks/secret-guesses.test.ts',
      'test/observability/audit.test.ts',
      'test/reliability/legacy-verification-off-loop.test.ts',
      'test/reliability/login-timing.test.ts',
    ],
  },
  idempotency: {
    mutate: 'src/idempotency/**/*.ts',
    tests: [
      'test/idempotency/*.test.ts',
      'test/reliability/handler-timeout-outcome.test.ts',
      'test/reliability/error-answers.test.ts',
      'test/company/customer-upsert.test.ts',
      'test/company/solicitation.test.ts',
      'test/registration/confirmation-replay.test.ts',
      'test/reliability/sync-replication.test.ts',
      'test/tenancy/route-declarations.test.ts',
    ],
  },
  webhooks: {
    mutate: 'src/webhooks/**/*.ts',
    tests: ['test/webhooks/*.test.ts', 'test/reliability/webhook-durability.test.ts'],
  },
}

/** MUTATION_SCOPE's scope; unset (`npx stryker run` by hand), every folder against every scope's tests in one run. */
const name = process.env.MUTATION_SCOPE ?? 'all'
const all = Object.values(scopes)
const scope = name === 'all' ? { mutate: all.map((each) => each.mutate), tests: [...new Set(all.flatMap((each) => each.tests))] } : scopes[name]
if (!scope) throw new Error(`MUTATION_SCOPE: one of ${Object.keys(scopes).join(', ')}, or unset for all at once`)

export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.config.ts', related: false },
  mutate: [scope.mutate].flat(),
  testFiles: scope.tests,
  // Each mutant runs only the tests that reached it in the dry run.
  coverageAnalysis: 'perTest',
  // Code run at import (module-level constants) would need every test per mutant: hours, not minutes.
  ignoreStatic: true,
  incremental: true,
  incrementalFile: `reports/mutation/${name}.incremental.json`,
  // The machine is shared: two test processes at most (each holds its own database).
  concurrency: 2,
  timeoutMS: 60_000,
  dryRunTimeoutMinutes: 30,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
}
