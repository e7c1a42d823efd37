import { Precompiled } from '../db/precompiled.js'
import type { Db, UsersTable } from '../../db/types.js'

export interface LoginCandidate {
  id: string
  email: string
  name: string
  password_hash: string
  is_active: boolean
  migration_state: UsersTable['migration_state']
}

const userByEmailStatement = new Precompiled((db, p: { email: string }) =>
  db.selectFrom('users').select(['id', 'email', 'name', 'password_hash', 'is_active', 'migration_state']).where('email', '=', p.email),
)

export function findUserByEmail(db: Db, email: string): Promise<LoginCandidate | undefined> {
  return userByEmailStatement.first(db, { email })
}
