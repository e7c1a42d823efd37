import { sql, type Kysely } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import { Precompiled } from '../../src/db/precompiled.js'
import type { Database } from '../../db/types.js'
import { DEMO } from '../helpers/app.js'
import { resetDatabase, testDatabase } from '../helpers/database.js'

const activeUserByEmail = new Precompiled((db, p: { email: string; minimumNameLength: number }) =>
  db
    .selectFrom('users')
    .select(['id', 'name'])
    .where('email', '=', p.email)
    .where('is_active', '=', true)
    .where(sql<boolean>`length(name) >= ${p.minimumNameLength}`),
)

describe('Precompiled statements', () => {
  beforeEach(async () => {
    await resetDatabase()
  })

  it("compiles once, with the values as parameters and the code's constants as literals", () => {
    expect(activeUserByEmail.sql).toBe('select "id", "name" from "users" where "email" = $1 and "is_active" = true and length(name) >= $2')
  })

  it('writes string constants as quoted literals, and keeps the ones SQL text cannot hold as parameters', async () => {
    const since = new Date('2000-01-01T00:00:00Z')
    const statement = new Precompiled((db, p: { email: string }) =>
      db
        .selectFrom('users')
        .select('id')
        .where('email', '=', p.email)
        .where('name', '<>', "O'Brien $1 -- not a comment")
        .where('created_at', '>', since),
    )
    expect(statement.sql).toBe(`select "id" from "users" where "email" = $1 and "name" <> 'O''Brien $1 -- not a comment' and "created_at" > $2`)
    const { db } = await testDatabase()
    expect(await statement.first(db, { email: 'alice@acme.example' })).toEqual({ id: DEMO.users.alice })
  })

  describe('refuses at module load what it cannot compile', () => {
    const users = (db: Kysely<Database>) => db.selectFrom('users').select('id')
    it.each([
      ['a branch on a parameter', (db: Kysely<Database>, p: { email?: string }) => (p.email ? users(db).where('email', '=', p.email) : users(db))],
      ['a default for a parameter', (db: Kysely<Database>, p: { email?: string }) => users(db).where('email', '=', p.email ?? 'x')],
      ['a spread of the parameters', (db: Kysely<Database>, p: { email: string }) => users(db).where('email', '=', { ...p }.email)],
      ['a list of their keys', (db: Kysely<Database>, p: { email: string }) => users(db).where('email', 'in', Object.keys(p))],
      ['`in` on the parameters', (db: Kysely<Database>, p: { email?: string }) => users(db).where('is_active', '=', 'email' in p)],
      ['a parameter made into text', (db: Kysely<Database>, p: { email: string }) => users(db).where('email', '=', `${p.email}`.trim())],
      ['a parameter used as a list', (db: Kysely<Database>, p: { ids: string[] }) => users(db).where('id', 'in', p.ids.map(String))],
    ])('%s', (_, build) => {
      expect(() => new Precompiled(build as (db: Kysely<Database>, p: object) => ReturnType<typeof users>)).toThrow(/^Precompiled: /)
    })
  })

  it("puts in each run's values", async () => {
    const { db } = await testDatabase()
    expect(await activeUserByEmail.rows(db, { email: 'alice@acme.example', minimumNameLength: 1 })).toEqual([
      { id: DEMO.users.alice, name: 'Alice Almeida' },
    ])
    expect(await activeUserByEmail.first(db, { email: 'bob@beta.example', minimumNameLength: 1 })).toMatchObject({ id: DEMO.users.bob })
    expect(await activeUserByEmail.first(db, { email: 'bob@beta.example', minimumNameLength: 100 })).toBeUndefined()
  })

  it('runs inside a transaction', async () => {
    const { db } = await testDatabase()
    const found = await db.transaction().execute((trx) => activeUserByEmail.first(trx, { email: 'alice@acme.example', minimumNameLength: 1 }))
    expect(found?.id).toBe(DEMO.users.alice)
  })
})
