import { createHash, pbkdf2Sync, randomInt, randomUUID } from 'node:crypto'
import argon2 from 'argon2'
import bcrypt from 'bcrypt'
import { testDatabase } from './database.js'

/** Django's get_random_string(22): the salt of its hashers. */
const djangoSalt = (): string => {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
  return Array.from({ length: 22 }, () => alphabet[randomInt(alphabet.length)]).join('')
}

/** Password hashes exactly as Django 5.2's hashers store them (django/contrib/auth/hashers.py). */
export const djangoHash = {
  /** PBKDF2PasswordHasher: 1,000,000 iterations in Django 5.2, 260,000 in 3.2. */
  pbkdf2Sha256(password: string, iterations: number): string {
    const salt = djangoSalt()
    return `pbkdf2_sha256$${iterations}$${salt}$${pbkdf2Sync(password, salt, iterations, 32, 'sha256').toString('base64')}`
  },
  /** Argon2PasswordHasher: argon2-cffi with time_cost=2, memory_cost=102400, parallelism=8. */
  async argon2(password: string): Promise<string> {
    const phc = await argon2.hash(password, {
      type: argon2.argon2id,
      timeCost: 2,
      memoryCost: 102_400,
      parallelism: 8,
      hashLength: 32,
      salt: Buffer.from(djangoSalt()),
    })
    return `argon2${phc}`
  },
  /** BCryptPasswordHasher: bcrypt (12 rounds, $2b$) of the password itself. */
  async bcrypt(password: string): Promise<string> {
    return `bcrypt$${await bcrypt.hash(password, 12)}`
  },
  /** BCryptSHA256PasswordHasher: bcrypt (12 rounds, $2b$) of the password's SHA-256 hex digest. */
  async bcryptSha256(password: string): Promise<string> {
    return `bcrypt_sha256$${await bcrypt.hash(createHash('sha256').update(password).digest('hex'), 12)}`
  },
}

/** A confirmed migrated account that logs in with `passwordHash`; its e-mail. */
export async function insertMigratedUser(passwordHash: string): Promise<string> {
  const { db } = await testDatabase()
  const email = `migrated-${randomUUID()}@legacy.example`
  await db
    .insertInto('users')
    .values({
      id: randomUUID(),
      email,
      name: 'Migrated User',
      password_hash: passwordHash,
      legacy_id: randomInt(1_000_000, 2_000_000_000),
      migration_state: 'confirmed',
    })
    .execute()
  return email
}
