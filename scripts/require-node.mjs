// The first thing `npm test`, `npm start`, `npm run dev` and the commands run (`pretest`, `predev`,
// and scripts/build-if-stale.mjs behind `prestart` and the commands' hooks): on a Node.js older than
// package.json's `engines`, one line and exit 1, instead of a 25 s build or a test run that fails
// minutes later with the reason buried in assertion diffs. Plain JavaScript any Node.js parses; the
// service's own check (src/lib/node-version.ts) prints the same line (a test keeps them equal).
import { readFileSync } from 'node:fs'
import process from 'node:process'
import { fileURLToPath, URL } from 'node:url'

const { engines } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))

/** The major version of `engines.node` (`>=24`). */
export const REQUIRED_NODE_MAJOR = Number(/[0-9]+/.exec(engines.node)?.[0])

/** The one line to print when `version` is older than the service needs, else undefined. */
export function nodeVersionProblem(version = process.versions.node) {
  const major = Number.parseInt(version, 10)
  if (major >= REQUIRED_NODE_MAJOR) return undefined
  return (
    `Node.js ${REQUIRED_NODE_MAJOR} or newer is needed; this is Node.js ${version}: ` +
    `install Node.js ${REQUIRED_NODE_MAJOR} (\`nvm install\` reads .nvmrc) and run the command again`
  )
}

/** Prints the line and exits 1 on an older Node.js. */
export function exitUnlessSupported() {
  const problem = nodeVersionProblem()
  if (!problem) return
  process.stderr.write(`${problem}\n`)
  process.exit(1)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) exitUnlessSupported()
