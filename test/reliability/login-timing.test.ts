import { describe, expect, it } from 'vitest'
import { DEMO_PASSWORD, useTestApp } from '../helpers/app.js'

const ctx = useTestApp({ LOGIN_FAILURES_PER_CLIENT: '1000', LOGIN_FAILURES_PER_ACCOUNT: '1000', LOGIN_FAILURES_PER_ADDRESS: '1000' })

async function timeFailedLogin(email: string): Promise<number> {
  const started = process.hrtime.bigint()
  const response = await ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email, password: `not ${DEMO_PASSWORD}` } })
  expect(response.statusCode).toBe(401)
  return Number(process.hrtime.bigint() - started) / 1e6
}

const median = (samples: number[]): number => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)] ?? 0

describe('login timing', () => {
  it('takes about as long for an unknown e-mail as for a known one (both pay one argon2id verification)', async () => {
    const known: number[] = []
    const unknown: number[] = []
    await timeFailedLogin('nobody@acme.example') // warm-up, and the dummy hash is made
    // Interleaved, so that both series see the same load on the machine.
    for (let round = 0; round < 21; round += 1) {
      known.push(await timeFailedLogin('alice@acme.example'))
      unknown.push(await timeFailedLogin('nobody@acme.example'))
    }
    const ratio = median(unknown) / median(known)
    // Generous bounds: a skipped verification would make the unknown case several times faster.
    expect(ratio).toBeGreaterThan(0.5)
    expect(ratio).toBeLessThan(2)
    expect(median(known)).toBeGreaterThan(5)
  })
})
