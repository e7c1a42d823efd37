import { randomUUID } from 'node:crypto'
import fastifyJwt from '@fastify/jwt'
import Fastify from 'fastify'
import { sql, type Kysely } from 'kysely'
import pg from 'pg'
import { seedDemoData } from '../db/seed/demo.js'
import { DEMO } from '../db/seed/ids.js'
import { keyRing, signingKeyId } from '../src/tokens/signing-keys.js'
import { newJti, TokenSigner, VerifiedTokenCache } from '../src/tokens/tokens.js'
import { createPostgresDatabase, migrateToLatest } from '../src/db/database.js'
import type { Database } from '../db/types.js'
import { BENCH_SECRETS } from './secrets.js'

/** The database a connection URL names (its path, decoded). */
export const databaseName = (databaseUrl: string): string => decodeURIComponent(new URL(databaseUrl).pathname.slice(1))

/** The same URL on the maintenance database `postgres`, to drop and create the bench database. */
function maintenanceUrl(databaseUrl: string): { url: string; name: string } {
  const url = new URL(databaseUrl)
  const name = databaseName(databaseUrl)
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`bench database name must be a plain identifier: ${name}`)
  url.pathname = '/postgres'
  return { url: url.toString(), name }
}

/** Drops the URL's database (whoever is connected) and creates it empty, through the server's `postgres` database. */
export async function recreateEmptyDatabase(databaseUrl: string): Promise<void> {
  const { url, name } = maintenanceUrl(databaseUrl)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
    await client.query(`CREATE DATABASE "${name}"`)
  } finally {
    await client.end()
  }
}

/**
 * A fresh bench database on every run, so that rows written by an earlier run (token families,
 * webhook deliveries) do not make this one slower: dropped, created, migrated and seeded with the
 * service's own functions.
 */
export async function recreateBenchDatabase(databaseUrl: string): Promise<void> {
  await recreateEmptyDatabase(databaseUrl)
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

export const BENCH_ENVELOPES = 30_000
export const benchEnvelopeKey = (n: number): string => `bench-envelope-${String(n).padStart(5, '0')}`
export const BENCH_SIGNERS = ['signer-a@bench.example', 'signer-b@bench.example'] as const

/**
 * Webhook targets: envelopes with two pending signers each, each on the one document of a title of
 * its own (draft titles of the Delta seller, which no measured route lists), so that webhook events
 * spread over many envelope rows as they would in production instead of queueing on one row lock,
 * and the table statistics look like production's (many titles with a few documents each), not
 * like one title with hundreds of documents, which led the planner to scan whole tables. Enough of
 * them that every signature event of a run (several rounds included) finds its signer still
 * pending and changes it, as a provider's events do, instead of being ignored as a repeat.
 * Written with generate_series: one statement per table.
 */
async function addBenchEnvelopes(db: Kysely<Database>): Promise<void> {
  await sql`
    INSERT INTO titles (id, seller_company_role_id, payer_customer_id, number, face_value, issue_date, due_date, status)
    SELECT md5('bench-title ' || n)::uuid, ${DEMO.roles.deltaSeller}::uuid, ${DEMO.customers.deltaCompany}::uuid,
           'BENCH-' || n, 1000.00, '2026-01-01', '2026-12-31', 'draft'
      FROM generate_series(0, ${BENCH_ENVELOPES - 1}::int) AS n`.execute(db)
  await sql`
    INSERT INTO title_documents (id, title_id, kind, filename, content_type, size_bytes, sha256)
    SELECT md5('bench-document ' || n)::uuid, md5('bench-title ' || n)::uuid, 'assignment_contract',
           'bench-' || n || '.pdf', 'application/pdf', 1000 + n, lpad(to_hex(n), 64, '0')
      FROM generate_series(0, ${BENCH_ENVELOPES - 1}::int) AS n`.execute(db)
  // The keys from benchEnvelopeKey itself, which the webhook load posts: no second spelling in SQL.
  const keys = Array.from({ length: BENCH_ENVELOPES }, (_, n) => benchEnvelopeKey(n))
  await sql`
    INSERT INTO signature_envelopes (id, envelope_key, title_document_id)
    SELECT md5('bench-envelope ' || (position - 1))::uuid, key, md5('bench-document ' || (position - 1))::uuid
      FROM unnest(${keys}::text[]) WITH ORDINALITY AS envelope (key, position)`.execute(db)
  await sql`
    INSERT INTO signature_signers (envelope_id, position, name, email)
    SELECT md5('bench-envelope ' || n)::uuid, signer.position, 'Bench Signer', signer.email
      FROM generate_series(0, ${BENCH_ENVELOPES - 1}::int) AS n
     CROSS JOIN unnest(${[...BENCH_SIGNERS]}::text[]) WITH ORDINALITY AS signer (email, position)`.execute(db)
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
 * `count` unspent refresh tokens, each the current one of its own family (many sessions refreshing, as in
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
      // Stored and signed as the service's login does (refreshTerm, then signRefreshStored); the
      // families outlive the token, so its own expiry is the one signed.
      const stored = Array.from({ length: size }, () => ({ familyId: randomUUID(), jti: newJti(), term: signer.refreshTerm() }))
      await handle.db
        .insertInto('token_families')
        .values(stored.map(({ familyId }) => ({ id: familyId, user_id: userId, absolute_expires_at: familyExpiresAt })))
        .execute()
      await handle.db
        .insertInto('token_family_rotations')
        .values(stored.map(({ familyId, jti }) => ({ family_id: familyId, current_refresh_jti: jti })))
        .execute()
      tokens.push(...stored.map(({ familyId, jti, term }) => signer.signRefreshStored(jti, userId, familyId, term).token))
    }
    await sql`ANALYZE token_families, token_family_rotations`.execute(handle.db)
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
    const jwt = {
      algorithm: 'HS256' as const,
      secret: BENCH_SECRETS.JWT_SIGNING_KEY,
      secretFallbacks: [],
      publicKeyFallbacks: [],
      issuer: undefined,
      audience: undefined,
      kidCutoverMs: undefined,
    }
    // With the key's kid, as the service signs: a token without one is refused after the cut-over.
    await jwtApp.register(fastifyJwt, { secret: jwt.secret, sign: { algorithm: 'HS256', kid: signingKeyId(jwt) } })
    await jwtApp.ready()
    const config = { accessTokenTtl: 3_600, refreshTokenTtl: 86_400, jwt }
    return new TokenSigner(jwtApp.jwt, config, new VerifiedTokenCache(0), keyRing(config))
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
