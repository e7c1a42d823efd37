import { execFileSync, spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { freePort, waitForPort } from '../helpers/ports.js'

export interface Nginx {
  port: number
  /** Points the upstream at these ports (a rolling deploy taking an instance out or putting it back) and reloads. */
  setUpstreams(ports: number[]): Promise<void>
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

/**
 * The gateway of the issue: keep-alive upstream connections, `proxy_next_upstream error timeout
 * http_503` (so a POST already sent is never retried), X-Forwarded-For appended. Its upstream idle
 * timeout (`keepalive_timeout`) is below the instances' DRAIN_DELAY, as the README asks.
 */
function config(dir: string, port: number, upstreams: number[], keepaliveTimeout: string): string {
  const temp = (name: string) => path.join(dir, name)
  return `
worker_processes 1;
error_log ${temp('error.log')} warn;
pid ${temp('nginx.pid')};
${process.getuid?.() === 0 ? 'user root;' : ''}
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${temp('body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  upstream api {
${upstreams.map((upstream) => `    server 127.0.0.1:${upstream} max_fails=1 fail_timeout=2s;`).join('\n')}
    keepalive 32;
    keepalive_timeout ${keepaliveTimeout};
  }
  server {
    listen 127.0.0.1:${port};
    keepalive_timeout 60s;
    location / {
      proxy_pass http://api;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_next_upstream error timeout http_503;
      proxy_connect_timeout 2s;
      proxy_read_timeout 20s;
    }
  }
}
`
}

export async function startNginx(upstreams: number[], options: { keepaliveTimeout?: string } = {}): Promise<Nginx> {
  const binary = nginxBinary()
  if (!binary) throw new Error('nginx is not installed')
  const dir = await mkdtemp(path.join(tmpdir(), 'nginx-'))
  for (const name of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) await mkdir(path.join(dir, name))
  const port = await freePort()
  const keepaliveTimeout = options.keepaliveTimeout ?? '2s'
  const file = path.join(dir, 'nginx.conf')
  await writeFile(file, config(dir, port, upstreams, keepaliveTimeout))
  const args = ['-p', dir, '-e', path.join(dir, 'error.log'), '-c', file]
  const child = spawn(binary, [...args, '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] })
  const output: string[] = []
  child.stdout?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  child.stderr?.on('data', (chunk: Buffer) => output.push(String(chunk)))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  await waitForPort(port, exited, () => output.join(''))
  return {
    port,
    async setUpstreams(ports) {
      await writeFile(file, config(dir, port, ports, keepaliveTimeout))
      execFileSync(binary, [...args, '-s', 'reload'])
      // The master starts new workers and retires the old ones; give it a moment.
      await new Promise((resolve) => setTimeout(resolve, 300))
    },
    errorLog: () => readFile(path.join(dir, 'error.log'), 'utf8').catch(() => ''),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT')
      await exited
      await rm(dir, { recursive: true, force: true })
    },
  }
}
