import { describe, expect, it } from 'vitest'
import { DEMO_PASSWORD, useTestApp } from '../helpers/app.js'
import { djangoHash, insertMigratedUser } from '../helpers/django-hashes.js'
import { scaled } from '../helpers/slowness.js'

// Issue 15 item 3: a wrong password must take the same time whatever the stored hash, so that
// nobody can list the migrated accounts that have not logged in yet (docs/api.md §2, route 1).
const password = 'the old password'
const hashMakers: Record<string, () => Promise<string> | string> = {
  pbkdf2At260k: () => djangoHash.pbkdf2Sha256(password, 260_000),
  pbkdf2At1M: () => djangoHash.pbkdf2Sha256(password, 1_000_000),
  djangoArgon2: () => djangoHash.argon2(password),
  bcryptSha256: () => djangoHash.bcryptSha256(password),
}
// Making a hash costs what verifying it costs: the floor is set, as an operator would, above the
// slowest verification on this machine as loaded now (a busy CI machine can be several times slower).
const legacyHashes: Record<string, string> = {}
let slowestMs = 0
for (const [name, make] of Object.entries(hashMakers)) {
  const started = performance.now()
  legacyHashes[name] = await make()
  slowestMs = Math.max(slowestMs, performance.now() - started)
}
// Three times the slowest, since the load can grow after this measurement; capped so that the
// test's own length stays bounded (6 accounts x 6 logins at the floor).
const FLOOR_MS = Math.min(3_000, Math.max(600, Math.ceil(slowestMs * 3)))
const ctx = useTestApp({
  LOGIN_FAILURE_MIN_MS: String(FLOOR_MS),
  LOGIN_FAILURES_PER_CLIENT: '1000',
  LOGIN_FAILURES_PER_ACCOUNT: '1000',
  LOGIN_FAILURES_PER_ADDRESS: '1000',
})

const median = (samples: number[]): number => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)] ?? 0

async function timeFailedLogin(email: string): Promise<number> {
  const started = performance.now()
  const response = await ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email, password: 'a wrong password' } })
  expect(response.statusCode).toBe(401)
  return performance.now() - started
}

describe('the time of a wrong password', { timeout: scaled(300_000) }, () => {
  const accounts: Record<string, string> = { unknownEmail: 'nobody-at-all@acme.example', argon2id: 'alice@acme.example' }

  it('is the same for an unknown e-mail, our argon2id and every legacy Django format (medians within 1.5x)', async () => {
    // After useTestApp's reset of the demo data.
    for (const [name, hash] of Object.entries(legacyHashes)) accounts[name] = await insertMigratedUser(hash)
    const names = Object.keys(accounts)
    const samples = Object.fromEntries(names.map((name) => [name, [] as number[]]))
    for (const name of names) await timeFailedLogin(accounts[name]!) // warm-up: the dummy hash, code paths
    // Interleaved, in an order that turns each round, so that every series sees the same load.
    for (let round = 0; round < 5; round += 1) {
      for (let step = 0; step < names.length; step += 1) {
        const name = names[(round + step) % names.length]!
        samples[name]!.push(await timeFailedLogin(accounts[name]!))
      }
    }
    const medians = Object.fromEntries(names.map((name) => [name, Math.round(median(samples[name]!))]))
    const detail = `medians (ms): ${JSON.stringify(medians)}`
    const values = Object.values(medians)
    expect(Math.max(...values) / Math.min(...values), detail).toBeLessThan(1.5)
    // The right password is not held back by the floor.
    expect(
      (await ctx.app.inject({ method: 'POST', url: '/api/auth/v1/token', payload: { email: 'alice@acme.example', password: DEMO_PASSWORD } }))
        .statusCode,
    ).toBe(200)
  })
})
