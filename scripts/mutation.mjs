#!/usr/bin/env node
// `npm run test:mutation [-- scope …]`: StrykerJS on each scope of stryker.config.mjs in turn (all
// of them when none is named), then one line per scope with its score. Extra Stryker flags go after
// the scopes (`npm run test:mutation -- auth --logLevel debug`). On PostgreSQL with
// TEST_DATABASE_URL (the tests that need a real server run too), else on the embedded database.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import process from 'node:process'
import { scopes } from '../stryker.config.mjs'

// Scopes first, then Stryker's flags.
const args = process.argv.slice(2)
const firstFlag = args.findIndex((arg) => arg.startsWith('-'))
const named = firstFlag === -1 ? args : args.slice(0, firstFlag)
const flags = firstFlag === -1 ? [] : args.slice(firstFlag)
const unknown = named.filter((name) => !(name in scopes))
if (unknown.length > 0) {
  process.stderr.write(`test:mutation: no scope ${unknown.join(', ')}; the scopes: ${Object.keys(scopes).join(', ')}\n`)
  process.exit(2)
}

/** Killed and timed-out mutants over all that ran with coverage or without (Stryker's "total"). */
function scoreOf(name) {
  const report = JSON.parse(readFileSync(`reports/mutation/${name}.json`, 'utf8'))
  const counts = {}
  for (const file of Object.values(report.files)) for (const mutant of file.mutants) counts[mutant.status] = (counts[mutant.status] ?? 0) + 1
  const detected = (counts.Killed ?? 0) + (counts.Timeout ?? 0)
  const undetected = (counts.Survived ?? 0) + (counts.NoCoverage ?? 0)
  const score = detected + undetected === 0 ? 100 : (100 * detected) / (detected + undetected)
  return `${score.toFixed(1)} % (${detected} killed, ${counts.Survived ?? 0} survived, ${counts.NoCoverage ?? 0} without coverage)`
}

const lines = []
let failed = false
for (const name of named.length > 0 ? named : Object.keys(scopes)) {
  const started = Date.now()
  const run = spawnSync('npx', ['stryker', 'run', ...flags], { stdio: 'inherit', env: { ...process.env, MUTATION_SCOPE: name } })
  const minutes = ((Date.now() - started) / 60_000).toFixed(1)
  if (run.status !== 0) {
    failed = true
    lines.push(`${name}: stryker exited ${run.status} after ${minutes} min`)
    continue
  }
  lines.push(`${name}: ${scoreOf(name)} in ${minutes} min`)
}
process.stdout.write(`\nmutation scores (reports/mutation/<scope>.html):\n${lines.map((line) => `  ${line}\n`).join('')}`)
process.exit(failed ? 1 : 0)
