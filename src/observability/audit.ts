import { createHash } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'

/**
 * Security-relevant events, one structured log line each, with a stable `event` field that log
 * pipelines alert on. Written through the request's logger, so each carries its request and trace
 * ids. Never a password, token or secret; an e-mail only as a digest.
 */
export const AUDIT_EVENTS = {
  /** A spent refresh token was presented again: its whole family is revoked (warn). */
  refreshTokenReplayed: 'refresh_token_replayed',
  /** A spent refresh token presented again within REFRESH_REUSE_GRACE, its successor unused: answered with that successor (info). */
  refreshTokenRetried: 'refresh_token_retried',
  /** A login attempt refused with 429: `reason` failures in the window, or attempts in flight that outlasted the wait (warn). */
  loginThrottled: 'login_throttled',
  /** A webhook delivery with a wrong path secret or Content-Hmac, or refused for too many wrong secrets (warn). */
  webhookRejected: 'webhook_rejected',
  /** A user's token families revoked because the user was disabled or their password changed (warn). */
  tokenFamiliesRevoked: 'token_families_revoked',
  /** A successful login, routes 1, 2 and 10 (info). */
  loginSucceeded: 'login_succeeded',
} as const

/**
 * The e-mail as a short digest: the same address gives the same value, so one account's attempts
 * can be followed across lines without the address itself being in the logs.
 */
export const emailDigest = (email: string): string => createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 16)

type Log = Pick<FastifyBaseLogger, 'info' | 'warn'>

const WEBHOOK_REJECTIONS = {
  secret: 'webhook rejected: unknown path secret',
  signature: 'webhook rejected: Content-Hmac missing or wrong',
  throttled: 'webhook rejected: too many wrong path secrets from this address',
} as const

export const audit = {
  refreshTokenReplayed(log: Log, fields: { userId: string; familyId: string; clientAddress: string }): void {
    log.warn(
      { event: AUDIT_EVENTS.refreshTokenReplayed, user_id: fields.userId, family_id: fields.familyId, client_address: fields.clientAddress },
      'spent refresh token presented again: token family revoked',
    )
  },
  refreshTokenRetried(log: Log, fields: { userId: string; familyId: string; clientAddress: string }): void {
    log.info(
      { event: AUDIT_EVENTS.refreshTokenRetried, user_id: fields.userId, family_id: fields.familyId, client_address: fields.clientAddress },
      'spent refresh token presented again within the grace: its unused successor issued again',
    )
  },
  loginThrottled(log: Log, fields: { email: string; clientAddress: string; reason: string | undefined; retryAfter: string | undefined }): void {
    log.warn(
      {
        event: AUDIT_EVENTS.loginThrottled,
        email_digest: emailDigest(fields.email),
        client_address: fields.clientAddress,
        reason: fields.reason,
        retry_after: fields.retryAfter === undefined ? undefined : Number(fields.retryAfter),
      },
      'login attempt throttled',
    )
  },
  webhookRejected(log: Log, fields: { provider: string; reason: keyof typeof WEBHOOK_REJECTIONS; clientAddress: string }): void {
    log.warn(
      { event: AUDIT_EVENTS.webhookRejected, provider: fields.provider, reason: fields.reason, client_address: fields.clientAddress },
      WEBHOOK_REJECTIONS[fields.reason],
    )
  },
  tokenFamiliesRevoked(log: Log, fields: { userId: string; reason: 'user_disabled' | 'password_changed'; families: number }): void {
    log.warn(
      { event: AUDIT_EVENTS.tokenFamiliesRevoked, user_id: fields.userId, reason: fields.reason, families: fields.families },
      'token families revoked',
    )
  },
  loginSucceeded(log: Log, fields: { userId: string; clientAddress: string; via: 'token' | 'login' | 'confirmation' }): void {
    log.info({ event: AUDIT_EVENTS.loginSucceeded, user_id: fields.userId, client_address: fields.clientAddress, via: fields.via }, 'login succeeded')
  },
}
