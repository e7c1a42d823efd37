import { createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { testDatabase } from '../helpers/database.js'
import { TEST_SECRETS } from '../helpers/secrets.js'

/** The tests' ESIGN_WEBHOOK_SECRETS (test/helpers/secrets.ts). */
export const WEBHOOK_SECRET = TEST_SECRETS.ESIGN_WEBHOOK_SECRETS
export const PENDING_ENVELOPE = 'demo-envelope-0001'
export const SIGNED_ENVELOPE = 'demo-envelope-0002'

/** A notification in the provider's shape; `data` as the provider sends it for signer events. */
export function notification(name: string, occurredAt: string, options: { key?: string; signer?: string; data?: unknown } = {}) {
  const data = options.data ?? (options.signer ? { signer: { email: options.signer, name: 'Someone' } } : undefined)
  return {
    event: { name, occurred_at: occurredAt, ...(data === undefined ? {} : { data }) },
    document: { key: options.key ?? PENDING_ENVELOPE, status: 'running' },
  }
}

export interface PostOptions {
  secret?: string
  headers?: Record<string, string>
  /** A path suffix: '' (no trailing slash) or '/' (the documented form). */
  trailing?: string
}

/** Posts a body (an object is sent as JSON, a string or Buffer as it is) to the webhook. */
export function postWebhook(app: FastifyInstance, body: unknown, options: PostOptions = {}) {
  const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body)
  return app.inject({
    method: 'POST',
    url: `/webhook/esign/${encodeURIComponent(options.secret ?? WEBHOOK_SECRET)}${options.trailing ?? '/'}`,
    headers: { 'content-type': 'application/json', ...options.headers },
    payload,
  })
}

export async function envelopeState(envelopeKey: string) {
  const { db } = await testDatabase()
  const envelope = await db
    .selectFrom('signature_envelopes')
    .select(['id', 'status', 'completed_at', 'last_event_at'])
    .where('envelope_key', '=', envelopeKey)
    .executeTakeFirstOrThrow()
  const signers = await db
    .selectFrom('signature_signers')
    .select(['email', 'status', 'signed_at', 'last_event_at'])
    .where('envelope_id', '=', envelope.id)
    .orderBy('position')
    .execute()
  return { status: envelope.status, completed_at: envelope.completed_at, last_event_at: envelope.last_event_at, signers }
}

export async function storedDeliveries() {
  const { db } = await testDatabase()
  return db.selectFrom('webhook_deliveries').selectAll().orderBy('received_at').orderBy('id').execute()
}

export const sha256Hex = (body: string | Buffer): string => createHash('sha256').update(body).digest('hex')
