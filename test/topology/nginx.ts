import { execFileSync, spawn } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { freePort, waitForPort } from '../helpers/ports.js'
import { makeTestCertificates } from './tls.js'

/** The gateway's configuration and its deny list, as compose.yaml mounts them. */
export const GATEWAY_CONFIG = 'deploy/nginx.conf'
export const BLOCKLIST = 'deploy/nginx/blocked-addresses.conf'

export interface Nginx {
  /** HTTPS (deploy/nginx.conf's :443). */
  port: number
  /** Plain HTTP (its :80): redirects. */
  httpPort: number
  /** The test authority's certificate, which signed the gateway's: what clients trust. */
  ca: string
  /** The folder nginx runs in: nginx.conf, tls/, gateway/blocked-addresses.conf. */
  dir: string
  /** This copy's deny list (deploy/nginx/blocked-addresses.conf at the start). */
  blocklist: string
  /** The arguments that point a `nginx` command (-t, -s reload) at this gateway. */
  args: string[]
  binary: string
  /** Points the upstream at these ports (a rolling deploy taking an instance out or putting it back) and reloads. */
  setUpstreams(ports: number[]): Promise<void>
  /** `nginx -s reload`, then `settleMs` for the new workers to start (old ones finish their requests meanwhile). */
  reload(settleMs?: number): Promise<void>
  errorLog(): Promise<string>
  stop(): Promise<void>
}

export function nginxBinary(): string | undefined {
  for (const candidate of ['/usr/sbin/nginx', '/usr/bin/nginx']) {
    try {
      execFileSync(candidate, ['-v'], { stdio: 'ignore' })
      return candidate
    } catch {
      // not there
    }
  }
  return undefined
}

export interface LocalGateway {
  dir: string
  httpPort: number
  httpsPort: number
  upstreams: number[]
  /** The upstream's idle keep-alive, below the instances' DRAIN_DELAY (deploy/nginx.conf: 4 s). */
  upstreamKeepaliveTimeout?: string
}

/**
 * deploy/nginx.conf made to run here, changed only where this machine differs from compose's: its
 * files in `dir` (pid, error log, temporary folders; no access log), 127.0.0.1 and free ports for its
 * listeners, the instances on local ports without Docker's resolver (nginx before 1.27.3 has no
 * `resolve`), and the upstream's idle timeout when a test's DRAIN_DELAY is shorter. Everything else
 * (TLS, the redirect, the deny list, headers, retries, limits) is the file's. Each change must find
 * its line, so that the file cannot drift away from what the tests run.
 */
export function localGatewayConfig(text: string, gateway: LocalGateway): string {
  let config = text
  const change = (pattern: RegExp, replacement: string | ((...groups: string[]) => string)) => {
    const matches = config.match(new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`))?.length ?? 0
    if (matches === 0) throw new Error(`${GATEWAY_CONFIG} no longer has ${pattern}: update test/topology/nginx.ts`)
    config = config.replace(pattern, replacement as string)
  }
  const temp = (name: string) => path.join(gateway.dir, name)
  change(/^pid .*;$/m, `pid ${temp('nginx.pid')};`)
  change(/^(\s*)access_log \/dev\/stdout;$/m, '$1access_log off;')
  change(/^(\s*)error_log \/dev\/stderr (\w+);$/m, `$1error_log ${temp('error.log')} $2;`)
  change(/^\s*resolver [^;]*;\n/m, '')
  change(/^(\s*)server api-1:3000 ([^;]*?) ?resolve;\n(?:\s*server api-\d+:3000 [^;]*;\n)*/m, (_, indent: string, flags: string) =>
    gateway.upstreams.map((port) => `${indent}server 127.0.0.1:${port} ${flags};\n`).join(''),
  )
  if (gateway.upstreamKeepaliveTimeout) change(/^(\s*)keepalive_timeout 4s;$/m, `$1keepalive_timeout ${gateway.upstreamKeepaliveTimeout};`)
  change(/^(\s*)listen 80;$/m, `$1listen 127.0.0.1:${gateway.httpPort};`)
  change(/^(\s*)listen 443 ssl;$/m, `$1listen 127.0.0.1:${gateway.httpsPort} ssl;`)
  const temporaryFolders = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((name) => `  ${name}_temp_path ${temp(name)};`).join('\n')
  change(/^http \{$/m, `http {\n${temporaryFolders}`)
  // As root, the workers would otherwise run as nobody, who cannot read the temporary folder.
  if (process.getuid?.() === 0) config = `user root;\n${config}`
  return config
}

/**
 * nginx with the real deploy/nginx.conf (localGatewayConfig) in front of `upstreams`: TLS with a
 * certificate of a test authority, the redirect on plain HTTP, the deny list copied from
 * deploy/nginx/blocked-addresses.conf. The upstream's idle timeout defaults to 2 s here (the
 * topology's instances drain for 3 s).
 */
export async function startNginx(upstreams: number[], options: { upstreamKeepaliveTimeout?: string } = {}): Promise<Nginx> {
  const binary = nginxBinary()
  if (!binary) throw new Error('nginx is not installed')
  const dir = await mkdtemp(path.join(tmpdir(), 'nginx-'))
  for (const name of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi', 'gateway']) await mkdir(path.join(dir, name))
  const { ca } = await makeTestCertificates(dir)
  const blocklist = path.join(dir, 'gateway', 'blocked-addresses.conf')
  await copyFile(BLOCKLIST, blocklist)
  const [httpPort, httpsPort] = [await freePort(), await freePort()]
  const source = await readFile(GATEWAY_CONFIG, 'utf8')
  const upstreamKeepaliveTimeout = options.upstreamKeepaliveTimeout ?? '2s'
  const file = path.join(dir, 'nginx.conf')
  const write = (ports: number[]) =>
    writeFile(file, localGatewayConfig(source, { dir, httpPort, httpsPort, upstreams: ports, upstreamKeepaliveTimeout }))
  await write(upstreams)
  // The folder is the prefix, so that the file's relative paths (tls/, gateway/) resolve in it.
  const args = ['-p', dir, '-e', path.join(dir, 'error.log'), '-c', file]
  const child = spawn(binary, [...args, '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] })
  const output: string[] = []
  child.stdout?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  child.stderr?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  const errorLog = () => readFile(path.join(dir, 'error.log'), 'utf8').catch(() => '')
  await waitForPort(httpsPort, exited, () => output.join('')).catch(async (error: Error) => {
    throw new Error(`${error.message}\n${await errorLog()}`)
  })
  const reload = async (settleMs = 300) => {
    execFileSync(binary, [...args, '-s', 'reload'])
    // The master starts new workers and retires the old ones; give it a moment.
    await new Promise((resolve) => setTimeout(resolve, settleMs))
  }
  return {
    port: httpsPort,
    httpPort,
    ca,
    dir,
    blocklist,
    args,
    binary,
    async setUpstreams(ports) {
      await write(ports)
      await reload()
    },
    reload,
    errorLog,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT')
      await exited
      await rm(dir, { recursive: true, force: true })
    },
  }
}
