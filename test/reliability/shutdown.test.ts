import { describe, expect, it } from 'vitest'
import { useServerProcesses } from '../helpers/server-process.js'
import { DEMO_PASSWORD } from '../helpers/app.js'

describe('SIGTERM under load', () => {
  const processes = useServerProcesses()

  it('finishes every request in flight, then exits 0', async () => {
    // debug: the service logs each request as it arrives, which tells when all are in flight.
    // Six logins per user at once: attempts count before their check (issue 15), so the limit must allow them.
    const server = await processes.start({ LOG_LEVEL: 'debug', LOGIN_FAILURES_PER_CLIENT: '10' })
    const login = (email: string) =>
      fetch(`${server.baseUrl}/api/auth/v1/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ email, password: DEMO_PASSWORD }),
      })
    // Password hashing makes each of these take a while: they are in flight when SIGTERM lands.
    const emails = ['alice@acme.example', 'bob@beta.example', 'carol@gamma.example', 'dave@delta.example']
    const inFlight = Array.from({ length: 24 }, (_, index) => login(emails[index % emails.length] ?? ''))
    // SIGTERM once the service has received all of them (a connection still in the kernel's
    // backlog is not yet in flight).
    const received = () => server.output.filter((line) => line.includes('incoming request') && line.includes('/api/auth/v1/token')).length ?? 0
    for (let waited = 0; received() < 24 && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(received()).toBe(24)
    const completedBeforeSignal = server.output.filter((line) => line.includes('request completed')).length
    server.child.kill('SIGTERM')
    const responses = await Promise.all(inFlight)
    expect(responses.map((response) => response.status)).toEqual(Array(24).fill(200))
    for (const response of responses) expect(await response.json()).toHaveProperty('access')
    expect(await server.exited).toBe(0)
    // Otherwise the test would prove nothing: some requests were still being served at the signal.
    expect(completedBeforeSignal).toBeLessThan(24)
    expect(server.output.some((line) => line.includes('shutting down'))).toBe(true)
    await expect(login('alice@acme.example')).rejects.toThrow()
  })
})
