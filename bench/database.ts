import fastifyJwt from '@fastify/jwt'
import Fastify from 'fastify'
import { sql, type Kysely } from 'kysely'
import pg from 'pg'
import { seedDemoData, DEMO } from '../db/seed/demo.js'
import { TokenSigner } from '../src/auth/tokens.js'
import { DEMO_SECRETS } from '../src/config.js'
import { createPostgresDatabase, migrateToLatest } from '../src/db/database.js'
import type { Database } from '../src/db/types.js'

/** The same URL on the maintenance database `postgres`, to drop and create the bench database. */
function maintenanceUrl(databaseUrl: string): { url: string; name: string } {
  const url = new URL(databaseUrl)
  const name = decodeURIComponent(url.pathname.slice(1))
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`bench database name must be a plain identifier: ${name}`)
  url.pathname = '/postgres'
  return { url: url.toString(), name }
}

/**
 * A fresh bench database on every run, so that rows written by an earlier run (token families,
 * webhook deliveries) do not make this one slower: dropped, created, migrated and seeded with the
 * service's own functions.
 */
export async function recreateBenchDatabase(databaseUrl: string): Promise<void> {
  const { url, name } = maintenanceUrl(databaseUrl)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
    await client.query(`CREATE DATABASE "${name}"`)
  } finally {
    await client.end()
  }
  const handle = createPostgresDatabase({ connectionString: databaseUrl, poolSize: 2 })
  try {
    await migrateToLatest(handle.db)
    await seedDemoData(handle.db)
    await addBenchEnvelopes(handle.db)
    await addDeliveryHistory(handle.db)
    await sql`ANALYZE`.execute(handle.db)
  } finally {
    await handle.db.destroy()
  }
}

export const BENCH_ENVELOPES = 2_000
export const benchEnvelopeKey = (n: number): string => `bench-envelope-${String(n).padStart(4, '0')}`
export const BENCH_SIGNERS = ['signer-a@bench.example', 'signer-b@bench.example'] as const

/**
 * Webhook targets: envelopes with two pending signers each, each on the one document of a title of
 * its own (draft titles of the Delta seller, which no measured route lists), so that webhook events
 * spread over many envelope rows as they would in production instead of queueing on one row lock,
 * and the table statistics look like production's (many titles with a few documents each), not
 * like one title with hundreds of documents, which led the planner to scan whole tables.
 */
async function addBenchEnvelopes(db: Kysely<Database>): Promise<void> {
  const numbers = Array.from({ length: BENCH_ENVELOPES }, (_, n) => n)
  const titles = await db
    .insertInto('titles')
    .values(numbers.map((n) => ({
      seller_company_role_id: DEMO.roles.deltaSeller,
      payer_customer_id: DEMO.customers.deltaCompany,
      number: `BENCH-${n}`,
      face_value: '1000.00',
      issue_date: '2026-01-01',
      due_date: '2026-12-31',
      status: 'draft' as const,
    })))
    .returning('id')
    .execute()
  const documents = await db
    .insertInto('title_documents')
    .values(numbers.map((n) => ({
      title_id: titles[n]!.id,
      kind: 'assignment_contract' as const,
      filename: `bench-${n}.pdf`,
      content_type: 'application/pdf',
      size_bytes: 1000 + n,
      sha256: n.toString(16).padStart(64, '0'),
    })))
    .returning('id')
    .execute()
  const envelopes = await db
    .insertInto('signature_envelopes')
    .values(documents.map((document, n) => ({ envelope_key: benchEnvelopeKey(n), title_document_id: document.id })))
    .returning('id')
    .execute()
  await db
    .insertInto('signature_signers')
    .values(envelopes.flatMap((envelope) =>
      BENCH_SIGNERS.map((email, position) => ({ envelope_id: envelope.id, position: position + 1, name: 'Bench Signer', email })),
    ))
    .execute()
}

const HISTORICAL_DELIVERIES = 20_000

/**
 * Deliveries received before the run, as a service in production has: with the table nearly empty,
 * PostgreSQL rightly plans the webhook's statements as scans of it, and (plans being made once per
 * connection, at first use) keeps scanning it while the run fills it, until an automatic ANALYZE.
 */
async function addDeliveryHistory(db: Kysely<Database>): Promise<void> {
  await sql`
    INSERT INTO webhook_deliveries (provider, dedupe_key, raw_body, received_at, event_name, envelope_key, occurred_at, outcome, processed_at)
    SELECT 'esign', encode(sha256(convert_to('history ' || n, 'UTF8')), 'hex'), convert_to('{"history": ' || n || '}', 'UTF8'),
           now() - n * interval '1 minute', 'sign', 'bench-history-' || (n % 5000), now() - n * interval '1 minute',
           'unmatched', now() - n * interval '1 minute'
      FROM generate_series(1, ${HISTORICAL_DELIVERIES}::int) AS n`.execute(db)
}

/**
 * `count` unspent refresh tokens, each in its own family (many sessions refreshing, as in
 * production; one family would serialise every request on its row lock). Written straight into
 * the tables and signed with the service's TokenSigner and key: making them through route 1 would
 * cost one argon2 verification each.
 */
export async function createRefreshTokens(databaseUrl: string, count: number, userId = DEMO.users.alice): Promise<string[]> {
  const signer = await serviceTokenSigner()
  const handle = createPostgresDatabase({ connectionString: databaseUrl, poolSize: 2 })
  const familyExpiresAt = new Date(Date.now() + 30 * 86_400_000)
  const tokens: string[] = []
  try {
    const BATCH = 2_000
    for (let done = 0; done < count; done += BATCH) {
      const size = Math.min(BATCH, count - done)
      const families = await handle.db
        .insertInto('token_families')
        .values(Array.from({ length: size }, () => ({ user_id: userId, absolute_expires_at: familyExpiresAt })))
        .returning('id')
        .execute()
      const signed = families.map((family) => signer.signRefresh(userId, family.id, familyExpiresAt))
      await handle.db
        .insertInto('refresh_tokens')
        .values(signed.map((token, i) => ({ jti: token.jti, family_id: families[i]!.id, expires_at: token.expiresAt })))
        .execute()
      tokens.push(...signed.map((token) => token.token))
    }
    await sql`ANALYZE token_families, refresh_tokens`.execute(handle.db)
  } finally {
    await handle.db.destroy()
  }
  return tokens
}

let signer: Promise<TokenSigner> | undefined

/** The service's TokenSigner with the key and lifetimes the bench starts the service with. */
export function serviceTokenSigner(): Promise<TokenSigner> {
  signer ??= (async () => {
    const jwtApp = Fastify()
    await jwtApp.register(fastifyJwt, { secret: DEMO_SECRETS.JWT_SIGNING_KEY, sign: { algorithm: 'HS256' } })
    await jwtApp.ready()
    const jwt = { algorithm: 'HS256' as const, secret: DEMO_SECRETS.JWT_SIGNING_KEY, issuer: undefined, audience: undefined }
    return new TokenSigner(jwtApp.jwt, { accessTokenTtl: 3_600, refreshTokenTtl: 86_400, jwt })
  })()
  return signer
}

/** `SELECT version()` of the server, for the results. */
export async function postgresVersion(databaseUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const result = await client.query<{ server_version: string }>('SHOW server_version')
    return result.rows[0]?.server_version ?? 'unknown'
  } finally {
    await client.end()
  }
}
