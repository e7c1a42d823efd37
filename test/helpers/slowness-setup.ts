import { vi } from 'vitest'
import { scaled } from './slowness.js'

// Each file's test and hook timeouts, from how slow the machine is as the file starts
// (test/helpers/slowness.ts): the load of a shared machine changes within a run.
vi.setConfig({ testTimeout: scaled(240_000), hookTimeout: scaled(240_000) })
