import { defineConfig } from 'vitest/config'

// The files that start the service as a process, or another program (nginx, PgBouncer, Patroni,
// Prometheus, Chromium, npm): most of the suite's time (docs/testing.md, "Run times"). They are
// `npm run test:system` (project `system`), so that `npm test` (project `main`) stays a suite a
// contributor can wait for; CI runs both. `npx vitest run <file>` finds a file in either.
const system = [
  'test/topology/**/*.test.ts',
  'test/platform/cli.test.ts',
  'test/platform/single-instance.test.ts',
  'test/platform/production-secrets.test.ts',
  'test/platform/dev-server.test.ts',
  'test/platform/docs-browser.test.ts',
  'test/platform/data-dir-lock.test.ts',
  'test/platform/example-client.test.ts',
  'test/client/package.test.ts',
  'test/observability/disable-user.test.ts',
  'test/observability/alert-firing.test.ts',
  'test/observability/alerts-and-dashboard.test.ts',
  'test/observability/tracing.test.ts',
  'test/observability/prometheus.test.ts',
  'test/observability/metrics-host.test.ts',
  'test/observability/runbook.test.ts',
  'test/reliability/shutdown.test.ts',
  'test/reliability/thread-priority.test.ts',
  'test/reliability/instances.test.ts',
  'test/reliability/webhook-durability.test.ts',
]

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/helpers/conformance-setup.ts', 'test/helpers/slowness-setup.ts'],
    pool: 'forks',
    // One database per worker, shared by the files that worker runs (see test/helpers/database.ts):
    // a new PGlite costs ~2.5 s and ~450 MB, too much to pay per file.
    isolate: false,
    maxWorkers: 2,
    // testTimeout and hookTimeout: 240 s stretched by how slow the machine is as each file starts
    // (test/helpers/slowness-setup.ts); several tests start real service processes.
    // `npm run test:coverage` (or COVERAGE=true, as CI's embedded-database run): V8's own counters,
    // of the code this process runs (not of the service processes some tests start).
    coverage: {
      enabled: process.env.COVERAGE === 'true',
      provider: 'v8',
      include: ['src/**', 'schemas/**', 'db/**'],
      reporter: ['text-summary', 'html'],
      reportsDirectory: 'coverage',
    },
    // Both projects take every setting above (`extends: true`); only the files differ.
    projects: [
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'], exclude: system } },
      { extends: true, test: { name: 'system', include: system } },
    ],
  },
})
