import { execFileSync } from 'node:child_process'
import { appendFile } from 'node:fs/promises'
import https from 'node:https'
import { afterEach, describe, expect, it } from 'vitest'
import { useServerProcesses } from '../helpers/server-process.js'
import { nginxBinary, startNginx, type Nginx } from './nginx.js'

// Issue 34: blocking an address at the gateway (docs/runbook.md, "Blocking an address at the
// gateway"). nginx runs deploy/nginx.conf over TLS in front of a service process; an address is added
// to the deny list and the gateway reloaded, while other clients keep a connection open: one with a
// request in flight, one idle, one sending request after request.

const unavailable = nginxBinary() === undefined
if (unavailable) console.warn('skipping the gateway deny-list test: no nginx (Debian: apt-get install nginx-light)')

const processes = useServerProcesses()

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
  /** The request went on a connection kept from an earlier one. */
  reused: boolean
}

function send(nginx: Nginx, agent: https.Agent, path: string, options: { method?: string; body?: unknown } = {}): Promise<Answer> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body)
  return new Promise((resolve, reject) => {
    const request = https.request(
      {
        host: '127.0.0.1',
        port: nginx.port,
        path,
        method: options.method ?? 'GET',
        agent,
        headers: body ? { 'content-type': 'application/json' } : {},
      },
      (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += String(chunk)))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text, reused: request.reusedSocket }))
        response.on('error', reject)
      },
    )
    // Whether the request went on a kept connection, for the error too.
    request.on('error', (error) => reject(Object.assign(error, { reused: request.reusedSocket })))
    request.end(body)
  })
}

describe.skipIf(unavailable)('the gateway deny list (issue 34)', () => {
  let nginx: Nginx | undefined
  afterEach(async () => {
    await nginx?.stop()
    nginx = undefined
  })

  it('refuses a denied address with 403 after a reload, which lets the requests in flight of other clients finish', async () => {
    // A failed login is answered after 3 s: a request long enough to be in flight across the reload.
    const service = await processes.start({ TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'warn', LOGIN_FAILURE_MIN_MS: '3000' })
    nginx = await startNginx([Number(new URL(service.baseUrl).port)])
    const gateway = nginx
    // Each client from its own loopback address, trusting the test authority; one connection each.
    const client = (address: string) => new https.Agent({ keepAlive: true, maxSockets: 1, localAddress: address, ca: gateway.ca })
    const [inFlight, idle, busy, blocked] = ['127.0.0.5', '127.0.0.6', '127.0.0.8', '127.0.0.7'].map(client) as [
      https.Agent,
      https.Agent,
      https.Agent,
      https.Agent,
    ]
    try {
      expect((await send(gateway, blocked, '/health/live')).status).toBe(200)
      expect((await send(gateway, inFlight, '/health/live')).status).toBe(200)
      expect((await send(gateway, idle, '/health/live')).status).toBe(200)

      // One client sends request after request on its connection all along. A request sent on its
      // idle connection just as the retiring worker closes it gets no answer (nginx closes idle
      // keep-alive connections at once when it retires a worker): the race of HTTP/1.1 keep-alive
      // that clients meet by sending such a request again (RFC 9112, 9.3.1; docs/retries.md), as
      // this one does, once. Anything else is a failure.
      const stream = { answered: 0, failed: [] as string[], reused: 0, raced: 0 }
      let streaming = true
      const streamer = (async () => {
        while (streaming) {
          for (let attempt = 1; ; attempt++) {
            try {
              const answer = await send(gateway, busy, '/health/live')
              stream.answered++
              if (answer.reused) stream.reused++
              if (answer.status !== 200) stream.failed.push(`${answer.status} ${answer.body.slice(0, 100)}`)
              break
            } catch (error) {
              const { message, reused } = error as Error & { reused?: boolean }
              if (attempt === 1 && reused) {
                stream.raced++
                continue
              }
              stream.failed.push(`${message} (attempt ${attempt}, ${reused ? 'kept' : 'new'} connection)`)
              break
            }
          }
        }
      })()

      // A request in flight on the connection opened above when the gateway reloads.
      const started = Date.now()
      const slow = send(gateway, inFlight, '/api/auth/v1/token', {
        method: 'POST',
        body: { email: 'alice@acme.example', password: 'not the password' },
      })
      await new Promise((resolve) => setTimeout(resolve, 1_000))

      // The runbook's recipe: a deny line, the configuration checked, then a reload.
      await appendFile(gateway.blocklist, 'deny 127.0.0.7; # the test\n')
      execFileSync(gateway.binary, [...gateway.args, '-t'], { stdio: 'pipe' })
      const reloadedAt = Date.now()
      await gateway.reload(500)

      const refused = await send(gateway, blocked, '/api/auth/v1/token', { method: 'POST', body: { email: 'alice@acme.example', password: 'x' } })
      expect(refused.status).toBe(403)
      expect(refused.headers['content-type']).toBe('application/problem+json')
      expect(JSON.parse(refused.body)).toMatchObject({ status: 403, code: 'address_blocked' })

      const answered = await slow
      const slowMs = Date.now() - started
      expect(answered.status).toBe(401)
      expect(JSON.parse(answered.body)).toMatchObject({ code: 'no_active_account' })
      expect(answered.reused).toBe(true)
      // Answered after the reload, on the connection opened before it.
      expect(started + slowMs).toBeGreaterThan(reloadedAt)

      // The idle connection: closed by the retiring worker, so the next request takes a new one.
      const afterIdle = await send(gateway, idle, '/health/live')
      expect(afterIdle.status).toBe(200)
      expect((await send(gateway, inFlight, '/health/live')).status).toBe(200)

      await new Promise((resolve) => setTimeout(resolve, 500))
      streaming = false
      await streamer
      process.stderr.write(
        `blocklist: reload with a request in flight (answered ${answered.status} after ${slowMs} ms, ${Date.now() - reloadedAt} ms since the reload, ` +
          `connection: ${String(answered.headers.connection)}); another client's ${stream.answered} requests across it, ${stream.reused} on a kept connection, ` +
          `${stream.raced} sent again after their kept connection closed as they went, ${stream.failed.length} failed; the idle connection's next request ${afterIdle.reused ? 'reused it' : 'opened a new one'}\n`,
      )
      expect(stream.failed).toEqual([])
      expect(stream.answered).toBeGreaterThan(10)
      expect(await gateway.errorLog()).not.toMatch(/\[(alert|emerg|crit)\]/)
    } finally {
      for (const agent of [inFlight, idle, busy, blocked]) agent.destroy()
    }
  })
})
