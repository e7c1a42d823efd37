import { spawn } from 'node:child_process'
import { scaled } from './slowness.js'

export interface ProcessRun {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs a command to its end with exactly `env` (nothing inherited unless passed), collecting its
 * output; killed after `timeoutMs` (stretched by the machine's slowness), so that a hung command fails its test instead of the run.
 */
export function runProcess(command: string, args: string[], env: Record<string, string | undefined>, timeoutMs = 60_000): Promise<ProcessRun> {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += String(chunk)))
  child.stderr.on('data', (chunk: Buffer) => (stderr += String(chunk)))
  const killer = setTimeout(() => child.kill('SIGKILL'), scaled(timeoutMs))
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(killer)
      resolve({ code, stdout, stderr })
    }),
  )
}
