import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { DEMO, problemOf, useTestApp, type Tokens } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'
import { isReplay, newKey, post } from '../idempotency/helpers.js'
import { linkFor, tokenFamilies } from './links.js'

/** A short refresh grace, waited for in real time: route 10's replays are bounded by it (issue 33 item 4). */
const GRACE_MS = 2500
const context = useTestApp({ REFRESH_REUSE_GRACE: `${GRACE_MS}ms` })

const confirm = (url: string, key: string) => post(context.app, url, undefined, { password: 'a new long passphrase' }, key)
const refresh = (token: string) => context.app.inject({ method: 'POST', url: '/api/auth/v1/token/refresh', payload: { refresh: token } })

describe('route 10 replays a session only within the refresh grace (issue 33 item 4)', () => {
  it('replays the same 201 to the retry of a lost answer, seconds later', async () => {
    const url = await linkFor('maria@legacy.example')
    const key = newKey()
    const first = await confirm(url, key)
    expect(first.statusCode).toBe(201)
    const retry = await confirm(url, key)
    expect([retry.statusCode, isReplay(retry), retry.body]).toEqual([201, true, first.body])
    expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
  })

  it('answers a replay after the grace with 409 idempotency_replay_expired, without tokens, even after the link is spent', async () => {
    const url = await linkFor('maria@legacy.example')
    const key = newKey()
    expect((await confirm(url, key)).statusCode).toBe(201)
    await sleep(GRACE_MS + 200)
    const late = await confirm(url, key)
    const body = problemOf(late, 409, 'idempotency_replay_expired')
    expect(body.detail).toMatch(/log in/)
    expect(late.body).not.toMatch(/"(access|refresh)"/)
    expect(late.headers['cache-control']).toBe('no-store')
    expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
  })

  it("never replays a session that was refreshed since: within the grace too, a replay gets no token, the owner's session lives on (issue 42, item 7)", async () => {
    const url = await linkFor('maria@legacy.example')
    const key = newKey()
    const owner = (await confirm(url, key)).json<Tokens>()
    // The owner refreshes at once: whoever holds the link and the key must not get the first pair,
    // whose spent refresh token would return the owner's live successor within the grace.
    const successor = await refresh(owner.refresh)
    expect(successor.statusCode).toBe(200)
    const replay = await confirm(url, key)
    problemOf(replay, 409, 'idempotency_replay_expired')
    expect(replay.body).not.toMatch(/"(access|refresh)"/)
    expect(replay.headers['cache-control']).toBe('no-store')
    // Nothing was revoked: the owner's session goes on.
    expect((await refresh(successor.json<Tokens>().refresh)).statusCode).toBe(200)
    expect(await tokenFamilies(DEMO.users.maria)).toBe(1)
  })
})

describe("route 10's Idempotency-Key is the link's own (issue 42, test a)", () => {
  it('one key on two links confirms each account: the second is not a replay of the first', async () => {
    // Lucas made a migrated account awaiting confirmation too, as Maria's.
    const { db } = await testDatabase()
    await db.updateTable('users').set({ migration_state: 'pending', is_active: false }).where('id', '=', DEMO.users.lucas).execute()
    const key = newKey()
    const maria = await confirm(await linkFor('maria@legacy.example'), key)
    const lucas = await confirm(await linkFor('lucas@legacy.example'), key)
    expect([maria.statusCode, lucas.statusCode]).toEqual([201, 201])
    expect([isReplay(maria), isReplay(lucas)]).toEqual([false, false])
    expect(lucas.json<Tokens>().refresh).not.toBe(maria.json<Tokens>().refresh)
    expect([await tokenFamilies(DEMO.users.maria), await tokenFamilies(DEMO.users.lucas)]).toEqual([1, 1])
  })
})
