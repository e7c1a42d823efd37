import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
  },
})
