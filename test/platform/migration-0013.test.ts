import { createCipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { canonicalJson, fingerprint, keyHash, openAnswer } from '../../src/idempotency/key.js'
import { findKey } from '../../src/idempotency/repository.js'
import { useDatabaseUpgradedFrom } from '../helpers/upgraded-database.js'

/**
 * Migration 0013 (issue 33): the compact rows. A key kept before it, its answer sealed the former
 * way (JSON), is still found by the service's key id and replays the same answer. Upgraded from 0012.
 */
const KEY = 'a-key-kept-before-0013'
const SCOPE = 'user:10000000-0000-4000-8000-000000000001'
const ROUTE = 'POST /api/company/:version/:company_role_id/customers/:id'
const REQUEST = { method: 'POST', route: ROUTE, params: { id: 'c1' }, body: { name: 'Before' } }
const ANSWER = { contentType: 'application/json; charset=utf-8', location: undefined, body: '{"id":"c1","name":"Before"}' }

/** As src/idempotency/key.ts sealed an answer before 0013: the KeptAnswer as JSON, and the whole HMAC. */
function formerRow() {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(hkdfSync('sha256', KEY, `${SCOPE}\0${ROUTE}`, 'idempotency answer', 32)), iv)
  const text = Buffer.concat([cipher.update(JSON.stringify(ANSWER), 'utf8'), cipher.final()])
  const fullFingerprint = createHmac('sha256', KEY)
    .update(canonicalJson([REQUEST.method, REQUEST.route, REQUEST.params, REQUEST.body]))
    .digest()
  return { answer: Buffer.concat([iv, cipher.getAuthTag(), text]), fingerprint: fullFingerprint }
}

const upgraded = useDatabaseUpgradedFrom('0012_solicitation_document_types', async (db) => {
  const row = formerRow()
  await sql`
    INSERT INTO idempotency_keys (scope, route, key_hash, fingerprint, status, answer)
    VALUES (${SCOPE}, ${ROUTE}, ${keyHash(KEY)}, ${row.fingerprint}, 201, ${row.answer})`.execute(db)
})

describe('migration 0013: compact idempotency_keys rows', () => {
  it('keeps a key kept before it: found by its key id, the same request, the same answer', async () => {
    const row = await findKey(upgraded.handle.db, { scope: SCOPE, route: ROUTE, keyHash: keyHash(KEY) })
    expect(row?.status).toBe(201)
    expect(Buffer.from(row!.fingerprint).equals(fingerprint(KEY, REQUEST))).toBe(true)
    expect(openAnswer(KEY, SCOPE, ROUTE, row!.answer)).toEqual(ANSWER)
    const columns = await sql<{ name: string }>`
      SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'idempotency_keys' AND table_schema = current_schema()
       ORDER BY ordinal_position`.execute(upgraded.handle.db)
    expect(columns.rows.map((column) => column.name)).toEqual(['created_at', 'status', 'key_id', 'fingerprint', 'answer'])
  })
})
