// `npm run test:mutation`: StrykerJS on the folders that decide who may do what (docs/testing.md).
// Incremental: a rerun tests only the mutants whose code or covering tests changed since the last
// run recorded in reports/mutation/ (a cache, not committed). While iterating, one folder at a time:
// `npm run test:mutation -- --mutate 'src/tenancy/**/*.ts'`.
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  // Each mutant runs only the tests that reached it in the dry run.
  coverageAnalysis: 'perTest',
  // Code run at import (module-level constants) would need every test per mutant: hours, not minutes.
  ignoreStatic: true,
  // src/tokens: the token code (issue, verify, families), in src/auth when the issue named the folders.
  mutate: ['src/tenancy/**/*.ts', 'src/tokens/**/*.ts', 'src/auth/**/*.ts', 'src/idempotency/**/*.ts', 'src/webhooks/**/*.ts'],
  incremental: true,
  incrementalFile: 'reports/mutation/incremental.json',
  // The machine is shared: two test processes at most (each holds its own embedded database).
  concurrency: 2,
  timeoutMS: 60_000,
  // The first run (every test, recording which reach which mutant) takes minutes on a busy machine.
  dryRunTimeoutMinutes: 30,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
}
