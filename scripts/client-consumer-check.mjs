// `npm run client:consumers [-- <typescript version>…]`: builds packages/client (dist/ with .d.ts,
// by the repository's TypeScript), installs the build into a temporary partner project, and
// compiles packages/client/test/consumer.ts against it with each TypeScript given (by default the
// repository's; e.g. `5.0 5.4 7` fetches those with npx), under a Node (nodenext) and a bundler
// configuration, neither with DOM or Node types. Prints one line per compilation; exit 1 if any
// failed. CI runs it with the repository's TypeScript (test/client/package.test.ts).
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import process from 'node:process'

const root = path.join(import.meta.dirname, '..')
const packageDir = path.join(root, 'packages', 'client')
const localTsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')

/** `tsc` of the given TypeScript version (npx), or the repository's. */
function tsc(version, args, cwd) {
  const command = version ? ['npx', ['--yes', '-p', `typescript@${version}`, 'tsc', ...args]] : [process.execPath, [localTsc, ...args]]
  return execFileSync(command[0], command[1], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

const CONFIGS = {
  nodenext: { module: 'nodenext', moduleResolution: 'nodenext' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
}

export function checkConsumers(versions = [undefined]) {
  const work = mkdtempSync(path.join(tmpdir(), 'client-consumer-'))
  try {
    const built = path.join(work, 'build')
    tsc(undefined, ['-p', path.join(packageDir, 'tsconfig.json'), '--outDir', built], root)
    const installed = path.join(work, 'partner', 'node_modules', '@receivables', 'api-client')
    mkdirSync(installed, { recursive: true })
    cpSync(built, path.join(installed, 'dist'), { recursive: true })
    cpSync(path.join(packageDir, 'package.json'), path.join(installed, 'package.json'))
    const partner = path.join(work, 'partner')
    writeFileSync(path.join(partner, 'package.json'), JSON.stringify({ name: 'partner', private: true, type: 'module' }))
    cpSync(path.join(packageDir, 'test', 'consumer.ts'), path.join(partner, 'consumer.ts'))
    const results = []
    for (const version of versions) {
      for (const [name, options] of Object.entries(CONFIGS)) {
        const config = `tsconfig.${name}.json`
        const compilerOptions = { ...options, target: 'es2022', lib: ['es2022'], types: [], strict: true, noEmit: true, skipLibCheck: false }
        writeFileSync(path.join(partner, config), JSON.stringify({ compilerOptions, files: ['consumer.ts'] }))
        let ok = true
        let output = ''
        let used = version ?? 'repository'
        try {
          used = tsc(version, ['--version'], partner).trim()
          tsc(version, ['-p', config], partner)
        } catch (error) {
          ok = false
          output = `${error.stdout ?? ''}${error.stderr ?? ''}`.trim()
        }
        results.push({ version: used, config: name, ok, output })
      }
    }
    return results
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

if (process.argv[1] === import.meta.filename) {
  const versions = process.argv.slice(2)
  const results = checkConsumers(versions.length > 0 ? versions : [undefined])
  for (const { version, config, ok, output } of results) {
    process.stdout.write(`${ok ? 'ok  ' : 'FAIL'}  ${version}, ${config}${ok ? '' : `\n${output}`}\n`)
  }
  if (results.some((result) => !result.ok)) process.exitCode = 1
}
