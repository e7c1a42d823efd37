import { createHash, pbkdf2, timingSafeEqual } from 'node:crypto'
import { promisify } from 'node:util'
import argon2 from 'argon2'
import bcrypt from 'bcrypt'
import { ConcurrencyLimit, ConcurrencyLimitFull, type Admission, type ConcurrencyObserver } from '../lib/concurrency-limit.js'

const pbkdf2Async = promisify(pbkdf2)

/** OWASP's minimum for argon2id: 19 MiB, 2 passes, 1 lane. */
export const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

/** libuv's thread pool size: UV_THREADPOOL_SIZE, 4 when unset; libuv makes 0 one thread and caps it at 1024. */
export function threadPoolSize(env: NodeJS.ProcessEnv = process.env): number {
  if (env.UV_THREADPOOL_SIZE === undefined) return 4
  const size = Number.parseInt(env.UV_THREADPOOL_SIZE, 10)
  return Number.isInteger(size) && size > 0 ? Math.min(size, 1024) : 1
}

/**
 * argon2 runs on libuv's thread pool and takes 19 MiB per hash. As many hashes run at once as the
 * pool has threads: with only one per core, a core idled each time a hash finished until the
 * event loop started the next (bench/RESULTS.md). The pool's threads run at a lower priority than the event loop
 * (src/lib/thread-priority.ts), so reads keep their latency. Logins beyond it wait here, not in
 * libuv's queue, so that other pool work (DNS lookups, files) waits for one hash at most.
 */
let hashing = hashingLimit(8) // PASSWORD_HASH_QUEUE_PER_THREAD's default, until the app configures it

/**
 * At most `queuedPerThread` hashes per pool thread wait for one; beyond, a login is refused at once
 * (503 with Retry-After) instead of making every login, the rightful ones too, wait behind a flood.
 * Process-wide, as the thread pool is: the app sets it at build time, before any login.
 */
export function configurePasswordHashing(options: { queuedPerThread: number; observer?: ConcurrencyObserver }): void {
  hashing = hashingLimit(options.queuedPerThread, options.observer)
}

function hashingLimit(queuedPerThread: number, observer?: ConcurrencyObserver): ConcurrencyLimit {
  const threads = threadPoolSize()
  return new ConcurrencyLimit(threads, { maxQueued: threads * queuedPerThread, ...(observer ? { observer } : {}) })
}

/** Password hashes waiting for a hashing thread now (a metric). */
export const passwordHashQueueDepth = (): number => hashing.queued

/** A full hashing queue: the error handler answers it 503 with Retry-After. */
export const isHashingBusy = (error: unknown): boolean => error instanceof ConcurrencyLimitFull

/** `admission`: a login's place in the queue, familiar places first and fair per source network and account (src/auth/login.ts). */
const whenHashingFree = <T>(task: () => Promise<T>, admission?: Admission): Promise<T> => hashing.run(task, admission)

export function hashPassword(password: string): Promise<string> {
  return whenHashingFree(() => argon2.hash(password, ARGON2_OPTIONS))
}

const argon2Verify = (phc: string, password: string, admission?: Admission): Promise<boolean> =>
  whenHashingFree(() => argon2.verify(phc, password), admission)

export interface VerifyResult {
  valid: boolean
  /** The stored hash is a migrated Django hash or weaker than ours: store a fresh one. */
  needsRehash: boolean
}

const INVALID: VerifyResult = { valid: false, needsRehash: false }

async function verifyArgon2(phc: string, password: string, migrated: boolean, admission?: Admission): Promise<VerifyResult> {
  try {
    if (!(await argon2Verify(phc, password, admission))) return INVALID
  } catch (error) {
    if (isHashingBusy(error)) throw error
    return INVALID
  }
  return { valid: true, needsRehash: migrated || argon2.needsRehash(phc, ARGON2_OPTIONS) }
}

/** Django's PBKDF2PasswordHasher: `pbkdf2_sha256$<iterations>$<salt>$<base64 digest>`. */
async function verifyDjangoPbkdf2(encoded: string, password: string, admission?: Admission): Promise<VerifyResult> {
  const [, iterationsText, salt, digest] = encoded.split('$')
  const iterations = Number(iterationsText)
  if (!salt || !digest || !Number.isInteger(iterations) || iterations < 1 || iterations > 10_000_000) return INVALID
  const expected = Buffer.from(digest, 'base64')
  if (expected.length === 0) return INVALID
  const actual = await whenHashingFree(() => pbkdf2Async(password, salt, iterations, expected.length, 'sha256'), admission)
  return timingSafeEqual(actual, expected) ? { valid: true, needsRehash: true } : INVALID
}

/** Django's BCryptSHA256PasswordHasher (`bcrypt_sha256$$2b$…`) and BCryptPasswordHasher (`bcrypt$$2b$…`). */
async function verifyDjangoBcrypt(encoded: string, password: string, prehash: boolean, admission?: Admission): Promise<VerifyResult> {
  const bcryptHash = encoded.slice(encoded.indexOf('$') + 1)
  const candidate = prehash ? createHash('sha256').update(password).digest('hex') : password
  try {
    return (await whenHashingFree(() => bcrypt.compare(candidate, bcryptHash), admission)) ? { valid: true, needsRehash: true } : INVALID
  } catch (error) {
    if (isHashingBusy(error)) throw error
    return INVALID
  }
}

/**
 * Checks a password against a stored hash: our argon2id, or one of the Django formats that
 * migrated accounts keep until their next successful login.
 */
export function verifyPassword(stored: string, password: string, admission?: Admission): Promise<VerifyResult> {
  if (stored.startsWith('$argon2')) return verifyArgon2(stored, password, false, admission)
  if (stored.startsWith('argon2$')) return verifyArgon2(stored.slice('argon2'.length), password, true, admission)
  if (stored.startsWith('pbkdf2_sha256$')) return verifyDjangoPbkdf2(stored, password, admission)
  if (stored.startsWith('bcrypt_sha256$')) return verifyDjangoBcrypt(stored, password, true, admission)
  if (stored.startsWith('bcrypt$')) return verifyDjangoBcrypt(stored, password, false, admission)
  // Unusable (`!…`) or unknown formats never match.
  return Promise.resolve(INVALID)
}

let dummyHash: Promise<string> | undefined

/**
 * Verifies against a throw-away hash with our parameters, so that an unknown e-mail costs the same
 * time as a known one.
 */
export async function spendVerificationTime(password: string, admission?: Admission): Promise<void> {
  dummyHash ??= hashPassword('dummy password for timing equalisation').catch((error: unknown) => {
    dummyHash = undefined // refused while busy: made by a later login
    throw error
  })
  await argon2Verify(await dummyHash, password, admission).catch((error: unknown) => {
    if (isHashingBusy(error)) throw error
  })
}
