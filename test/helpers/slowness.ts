import { spawnSync } from 'node:child_process'
import { performance } from 'node:perf_hooks'

/**
 * Time bounds of tests that start processes, derived from how slow the machine is now instead of
 * fixed: a loaded machine makes those tests slower, not red (issue 43). The baseline is the start
 * of a trivial Node process with tsx's loader, as every service process the tests start has.
 */

/** That start on a quiet 2-core machine (Node 24, load average 1: 140-150 ms). */
const QUIET_START_MS = 150
/** Measured again after this long: the load of a shared machine changes within minutes. */
const REMEASURE_AFTER_MS = 120_000

function trivialStartMs(): number {
  const started = performance.now()
  spawnSync(process.execPath, ['--import', 'tsx', '-e', '0'], { stdio: 'ignore' })
  return performance.now() - started
}

let last: { at: number; factor: number } | undefined

/** How many times slower than on a quiet machine a trivial process starts now (at least 1). */
export function slowness(): number {
  if (!last || Date.now() - last.at > REMEASURE_AFTER_MS) {
    const samples = [trivialStartMs(), trivialStartMs(), trivialStartMs()].sort((a, b) => a - b)
    last = { at: Date.now(), factor: Math.max(1, (samples[1] ?? QUIET_START_MS) / QUIET_START_MS) }
  }
  return last.factor
}

/** A bound chosen for a quiet machine, stretched by `slowness()`. */
export const scaled = (quietMs: number): number => Math.round(quietMs * slowness())
