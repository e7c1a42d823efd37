import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { describe, expect, it } from 'vitest'
import { addressKey } from '../../src/lib/client-address.js'
import { buildTestApp, problemOf, useTestApp } from '../helpers/app.js'
import { WEBHOOK_SECRET, notification } from '../webhooks/helpers.js'

// Issue 42 item 1: an IPv6 /64 is one subscriber, and an address counts as one whatever its
// spelling: the per-address limits key on addressKey (src/lib/client-address.ts).
const LIMITS = { LOGIN_FAILURES_PER_ADDRESS: '10', LOGIN_FAILURE_WINDOW: '60' }

/** 20 addresses of 2001:db8:aa:bb::/64, written every way a peer or a gateway may write them. */
const ONE_SLASH_64 = [
  '2001:db8:aa:bb::1',
  '2001:DB8:AA:BB::2',
  '2001:0db8:00aa:00bb:0000:0000:0000:0003',
  '2001:db8:aa:bb:1:2:3:4',
  '2001:db8:aa:bb::5%eth0',
  '2001:db8:aa:bb::1.2.3.4',
  '2001:db8:aa:bb:ffff:ffff:ffff:ffff',
  ...Array.from({ length: 13 }, (_, index) => `2001:db8:aa:bb:${(index + 1).toString(16)}::${(index * 7).toString(16)}`),
]
/** 198.51.100.7 and its IPv4-mapped spellings, as a dual-stack socket reports it. */
const ONE_IPV4 = ['198.51.100.7', '::ffff:198.51.100.7', '::FFFF:C633:6407', '0:0:0:0:0:ffff:198.51.100.7']

const statusCounts = (responses: LightMyRequestResponse[]) =>
  responses.reduce<Record<number, number>>((counts, { statusCode }) => ({ ...counts, [statusCode]: (counts[statusCode] ?? 0) + 1 }), {})

const wrongLogin = (app: FastifyInstance, remoteAddress: string, index: number) =>
  app.inject({
    method: 'POST',
    url: '/api/auth/v1/token',
    payload: { email: `nobody-${index}-${Math.random().toString(36).slice(2)}@nowhere.example`, password: `guess ${index}` },
    remoteAddress,
  })

const webhookBody = JSON.stringify(notification('sign', '2026-05-01T10:00:00.000Z', { signer: 'bob@beta.example' }))
const webhook = (app: FastifyInstance, secret: string, remoteAddress: string) =>
  app.inject({
    method: 'POST',
    url: `/webhook/esign/${secret}/`,
    headers: { 'content-type': 'application/json' },
    payload: webhookBody,
    remoteAddress,
  })

describe('failed logins per address: IPv6 per /64, IPv4 per address, whatever the spelling', () => {
  const context = useTestApp(LIMITS)

  it('stops 20 concurrent wrong logins from 20 addresses of one /64 at the per-address limit', async () => {
    const responses = await Promise.all(ONE_SLASH_64.map((address, index) => wrongLogin(context.app, address, index)))
    expect(statusCounts(responses)).toEqual({ 401: 10, 429: 10 })
    for (const response of responses.filter(({ statusCode }) => statusCode === 429)) problemOf(response, 429, 'throttled')
    // The next /64 is another subscriber.
    expect((await wrongLogin(context.app, '2001:db8:aa:bc::1', 99)).statusCode).toBe(401)
  })

  it('counts an IPv4 address and its IPv4-mapped spellings as one', async () => {
    const responses = await Promise.all(Array.from({ length: 20 }, (_, index) => wrongLogin(context.app, ONE_IPV4[index % ONE_IPV4.length]!, index)))
    expect(statusCounts(responses)).toEqual({ 401: 10, 429: 10 })
    // Its neighbour is not counted with it: IPv4 is per address.
    expect((await wrongLogin(context.app, '198.51.100.8', 99)).statusCode).toBe(401)
  })
})

describe('ADDRESS_IPV6_PREFIX', () => {
  it('counts two /64s of one /56 together when set to 56', async () => {
    const app = await buildTestApp({ ...LIMITS, ADDRESS_IPV6_PREFIX: '56' })
    try {
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, index) => wrongLogin(app, `2001:db8:aa:${index % 2 === 0 ? 'b1' : 'b2'}::${index + 1}`, index)),
      )
      expect(statusCounts(responses)).toEqual({ 401: 10, 429: 10 })
      expect((await wrongLogin(app, '2001:db8:aa:100::1', 99)).statusCode).toBe(401)
    } finally {
      await app.close()
    }
  })
})

describe('wrong webhook path secrets per address: IPv6 per /64', () => {
  const context = useTestApp(LIMITS)

  it('stops 20 concurrent wrong secrets from 20 addresses of one /64 at the limit; another /64 gets through', async () => {
    const responses = await Promise.all(ONE_SLASH_64.map((address, index) => webhook(context.app, `guess-${index}-x`, address)))
    expect(statusCounts(responses)).toEqual({ 404: 10, 429: 10 })
    problemOf(await webhook(context.app, WEBHOOK_SECRET, '2001:DB8:AA:BB::99'), 429, 'throttled')
    expect((await webhook(context.app, WEBHOOK_SECRET, '2001:db8:aa:bc::99')).statusCode).toBe(201)
  })
})

describe('addressKey', () => {
  it.each([
    ['198.51.100.7', '198.51.100.7'],
    ['::ffff:198.51.100.7', '198.51.100.7'],
    ['::FFFF:C633:6407', '198.51.100.7'],
    ['2001:DB8:0001:0002:aaaa:bbbb:cccc:dddd', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::%eth0', '2001:db8:1:2::/64'],
    ['::1', '0:0:0:0::/64'],
    [' not an Address ', 'not an address'],
  ])('%s is counted as %s', (address, key) => {
    expect(addressKey(address)).toBe(key)
  })

  it('follows the prefix: /56 cuts the fourth group, /128 keeps all', () => {
    expect(addressKey('2001:db8:aa:b1ff::1', 56)).toBe('2001:db8:aa:b100::/56')
    expect(addressKey('2001:db8::1', 128)).toBe('2001:db8:0:0:0:0:0:1/128')
  })
})
