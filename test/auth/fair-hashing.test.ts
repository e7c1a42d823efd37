import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { DEMO_PASSWORD, problemOf, useTestApp } from '../helpers/app.js'

// Issue 42 item 4: the password-hashing queue (4 threads, 2 waiting per thread here: 8 places)
// is shared fairly: familiar addresses first, and a full queue gives a newcomer the place of the
// source network or account holding the most, so that a flood cannot starve other logins.
const ENV = {
  TRUST_PROXY: 'true',
  PASSWORD_HASH_QUEUE_PER_THREAD: '2',
  LOGIN_FAILURES_PER_ADDRESS: '1000',
  LOGIN_FAILURES_PER_ACCOUNT: '1000',
  LOGIN_BURST_WAIT: '8s',
}
const HOME = '203.0.113.10'

const login = (app: FastifyInstance, address: string, email: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/auth/v1/token', headers: { 'x-forwarded-for': address }, payload: { email, password } })

type Guess = (index: number) => [address: string, email: string]
const fromOneSlash64: Guess = (index) => [`2001:db8:66:1:${(index + 1).toString(16)}::1`, `nobody-${index}@nowhere.example`]
const from40Slash24s: Guess = (index) => [`198.51.${index}.7`, `nobody-${index}@nowhere.example`]
const atAliceFrom40Slash24s: Guess = (index) => [`198.18.${index}.7`, 'alice@acme.example']

/** 40 concurrent wrong guesses with 4 rightful logins spread among them; the rightful answers. */
async function flood(app: FastifyInstance, guess: Guess, rightful: (index: number) => Promise<LightMyRequestResponse>) {
  // Unknown e-mails verify against one throw-away hash, made by the first: made before the flood.
  expect((await login(app, '192.0.2.1', 'warm-up@nowhere.example', 'guess')).statusCode).toBe(401)
  const requests: { rightful: boolean; response: Promise<LightMyRequestResponse> }[] = []
  for (let index = 0; index < 40; index++) {
    const [address, email] = guess(index)
    requests.push({ rightful: false, response: login(app, address, email, `guess ${index}`) })
    if (index % 10 === 9) requests.push({ rightful: true, response: rightful(index) })
  }
  const responses = await Promise.all(requests.map(({ response }) => response))
  const guesses = responses.filter((_, index) => !requests[index]!.rightful)
  expect(guesses.some((response) => response.statusCode === 503)).toBe(true)
  for (const response of guesses.filter(({ statusCode }) => statusCode !== 401)) problemOf(response, 503, 'service_unavailable')
  return responses.filter((_, index) => requests[index]!.rightful).map((response) => response.statusCode)
}

describe('the password-hashing queue, flooded', () => {
  const context = useTestApp(ENV)
  const owner = () => login(context.app, HOME, 'alice@acme.example', DEMO_PASSWORD)
  // Four users who never logged in from these: unfamiliar, each from a /24 of its own.
  const NEWCOMERS = ['bob@beta.example', 'carol@gamma.example', 'dave@delta.example', 'erin@acme.example']
  const newcomer = (index: number) => login(context.app, `192.0.${index}.20`, NEWCOMERS[Math.floor(index / 10)]!, DEMO_PASSWORD)

  it('answers the owner from a familiar address while 40 guesses come from one /64', async () => {
    expect((await owner()).statusCode).toBe(200)
    expect(await flood(context.app, fromOneSlash64, owner)).toEqual([200, 200, 200, 200])
  })

  it('answers the owner from a familiar address while 40 /24s guess at once', async () => {
    expect((await owner()).statusCode).toBe(200)
    expect(await flood(context.app, from40Slash24s, owner)).toEqual([200, 200, 200, 200])
  })

  it('answers a login from an unfamiliar network while one /64 fills the queue: a network holds no more than its share', async () => {
    expect(await flood(context.app, fromOneSlash64, newcomer)).toEqual([200, 200, 200, 200])
  })

  it('answers a login of another account while 40 /24s guess at one account: an account holds no more than its share', async () => {
    expect(await flood(context.app, atAliceFrom40Slash24s, newcomer)).toEqual([200, 200, 200, 200])
  })
})
