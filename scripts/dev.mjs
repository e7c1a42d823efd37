// `npm run dev`: the service from source, reloaded on every save in well under a second
// (scripts/dev-runner.mjs; CONTRIBUTING.md has the figures). This process only starts the runner,
// and starts it again when it asks (exit status 75: its own code, the packages or the TypeScript
// settings changed, or its reloads have used enough memory).
import { spawn } from 'node:child_process'
import path from 'node:path'
import process from 'node:process'

const RESTART = 75
const runner = path.join(import.meta.dirname, 'dev-runner.mjs')
let child

function start() {
  // Stack traces point into src/ (the bundle's source map).
  child = spawn(process.execPath, ['--enable-source-maps', runner], { stdio: 'inherit' })
  child.on('exit', (code) => {
    if (code === RESTART) start()
    else process.exit(code ?? 1)
  })
}

// Ctrl-C reaches the runner too (one process group); a SIGTERM sent to this process is passed on.
process.on('SIGINT', () => undefined)
process.on('SIGTERM', () => child.kill('SIGTERM'))
start()
