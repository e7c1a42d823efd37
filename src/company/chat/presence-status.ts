/** What route 6 shows for a partner's company role. */
import type { PresenceStatus } from '../../vocabulary.js'

/** Seen within this is online (§4 route 6). */
export const ONLINE_WITHIN_MS = 2 * 60_000
/** Seen within this (and not online) is away; older, or never seen, is offline. */
export const AWAY_WITHIN_MS = 15 * 60_000

/** A last_seen_at slightly ahead of `now` (clock skew) counts as just seen. */
export function presenceStatus(lastSeenAt: Date | null, now: Date): PresenceStatus {
  if (!lastSeenAt) return 'offline'
  const age = now.getTime() - lastSeenAt.getTime()
  if (age < ONLINE_WITHIN_MS) return 'online'
  if (age < AWAY_WITHIN_MS) return 'away'
  return 'offline'
}
