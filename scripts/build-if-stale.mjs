// `npm start` and the commands (`npm run migrate|seed|…`) run the bundles in dist/: this builds them
// (`npm run build`: type check, then bundle) only when a source is newer than the oldest bundle, so
// that a command answers in about a second instead of waiting 10-20 s for a build that changes
// nothing. The Docker image builds once and runs `node dist/*.js` directly.
import { execSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { exitUnlessSupported } from './require-node.mjs'

exitUnlessSupported()

const root = path.join(import.meta.dirname, '..')
const BUNDLES = ['server.js', 'migrate.js', 'seed.js', 'unseed.js', 'confirmation-link.js', 'retention.js', 'disable-user.js']
const SOURCES = ['src', 'schemas', 'db', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs']

/** The newest modification time under a file or folder. */
function newest(entry) {
  const stats = statSync(entry)
  if (!stats.isDirectory()) return stats.mtimeMs
  return Math.max(0, ...readdirSync(entry).map((name) => newest(path.join(entry, name))))
}

function oldestBundle() {
  try {
    return Math.min(...BUNDLES.map((name) => statSync(path.join(root, 'dist', name)).mtimeMs))
  } catch {
    return 0 // a bundle is missing
  }
}

if (Math.max(...SOURCES.map((source) => newest(path.join(root, source)))) > oldestBundle()) {
  execSync('npm run build', { cwd: root, stdio: 'inherit' })
}
