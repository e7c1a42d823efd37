import { createHash, pbkdf2, timingSafeEqual } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { promisify } from 'node:util'
import argon2 from 'argon2'
import bcrypt from 'bcryptjs'
import { ConcurrencyLimit } from '../lib/concurrency-limit.js'

const pbkdf2Async = promisify(pbkdf2)

/** OWASP's minimum for argon2id: 19 MiB, 2 passes, 1 lane. */
export const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

/**
 * argon2 runs on libuv's thread pool (4 threads by default) and takes 19 MiB per hash: more hashes
 * at once than cores only add memory and contention, not throughput. Logins beyond it wait here.
 */
const hashing = new ConcurrencyLimit(availableParallelism())

export function hashPassword(password: string): Promise<string> {
  return hashing.run(() => argon2.hash(password, ARGON2_OPTIONS))
}

const argon2Verify = (phc: string, password: string): Promise<boolean> => hashing.run(() => argon2.verify(phc, password))

export interface VerifyResult {
  valid: boolean
  /** The stored hash is a migrated Django hash or weaker than ours: store a fresh one. */
  needsRehash: boolean
}

const INVALID: VerifyResult = { valid: false, needsRehash: false }

async function verifyArgon2(phc: string, password: string, migrated: boolean): Promise<VerifyResult> {
  try {
    if (!(await argon2Verify(phc, password))) return INVALID
  } catch {
    return INVALID
  }
  return { valid: true, needsRehash: migrated || argon2.needsRehash(phc, ARGON2_OPTIONS) }
}

/** Django's PBKDF2PasswordHasher: `pbkdf2_sha256$<iterations>$<salt>$<base64 digest>`. */
async function verifyDjangoPbkdf2(encoded: string, password: string): Promise<VerifyResult> {
  const [, iterationsText, salt, digest] = encoded.split('$')
  const iterations = Number(iterationsText)
  if (!salt || !digest || !Number.isInteger(iterations) || iterations < 1 || iterations > 10_000_000) return INVALID
  const expected = Buffer.from(digest, 'base64')
  if (expected.length === 0) return INVALID
  const actual = await pbkdf2Async(password, salt, iterations, expected.length, 'sha256')
  return timingSafeEqual(actual, expected) ? { valid: true, needsRehash: true } : INVALID
}

/** Django's BCryptSHA256PasswordHasher (`bcrypt_sha256$$2b$…`) and BCryptPasswordHasher (`bcrypt$$2b$…`). */
async function verifyDjangoBcrypt(encoded: string, password: string, prehash: boolean): Promise<VerifyResult> {
  const bcryptHash = encoded.slice(encoded.indexOf('$') + 1)
  const candidate = prehash ? createHash('sha256').update(password).digest('hex') : password
  try {
    return (await bcrypt.compare(candidate, bcryptHash)) ? { valid: true, needsRehash: true } : INVALID
  } catch {
    return INVALID
  }
}

/**
 * Checks a password against a stored hash: our argon2id, or one of the Django formats that
 * migrated accounts keep until their next successful login.
 */
export function verifyPassword(stored: string, password: string): Promise<VerifyResult> {
  if (stored.startsWith('$argon2')) return verifyArgon2(stored, password, false)
  if (stored.startsWith('argon2$')) return verifyArgon2(stored.slice('argon2'.length), password, true)
  if (stored.startsWith('pbkdf2_sha256$')) return verifyDjangoPbkdf2(stored, password)
  if (stored.startsWith('bcrypt_sha256$')) return verifyDjangoBcrypt(stored, password, true)
  if (stored.startsWith('bcrypt$')) return verifyDjangoBcrypt(stored, password, false)
  // Unusable (`!…`) or unknown formats never match.
  return Promise.resolve(INVALID)
}

let dummyHash: Promise<string> | undefined

/**
 * Verifies against a throw-away hash with our parameters, so that an unknown e-mail costs the same
 * time as a known one.
 */
export async function spendVerificationTime(password: string): Promise<void> {
  dummyHash ??= hashPassword('dummy password for timing equalisation')
  await argon2Verify(await dummyHash, password).catch(() => false)
}
