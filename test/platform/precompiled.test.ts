import { sql } from 'kysely'
import { beforeEach, describe, expect, it } from 'vitest'
import { Precompiled } from '../../src/db/precompiled.js'
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

  it('compiles once, with the values as parameters and the constants kept', () => {
    expect(activeUserByEmail.sql).toBe(
      'select "id", "name" from "users" where "email" = $1 and "is_active" = $2 and length(name) >= $3',
    )
  })

  it('puts in each run\'s values', async () => {
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
