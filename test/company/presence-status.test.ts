import { describe, expect, it } from 'vitest'
import { AWAY_WITHIN_MS, ONLINE_WITHIN_MS, presenceStatus } from '../../src/company/chat/presence-status.js'

const now = new Date('2026-05-10T12:00:00.000Z')
const ago = (ms: number) => new Date(now.getTime() - ms)

describe('presenceStatus', () => {
  it('is offline when never seen', () => {
    expect(presenceStatus(null, now)).toBe('offline')
  })

  it('is online within 2 minutes', () => {
    expect(ONLINE_WITHIN_MS).toBe(2 * 60_000)
    expect(presenceStatus(ago(0), now)).toBe('online')
    expect(presenceStatus(ago(60_000), now)).toBe('online')
    expect(presenceStatus(ago(ONLINE_WITHIN_MS - 1), now)).toBe('online')
  })

  it('is away from 2 up to 15 minutes', () => {
    expect(AWAY_WITHIN_MS).toBe(15 * 60_000)
    expect(presenceStatus(ago(ONLINE_WITHIN_MS), now)).toBe('away')
    expect(presenceStatus(ago(5 * 60_000), now)).toBe('away')
    expect(presenceStatus(ago(AWAY_WITHIN_MS - 1), now)).toBe('away')
  })

  it('is offline from 15 minutes on', () => {
    expect(presenceStatus(ago(AWAY_WITHIN_MS), now)).toBe('offline')
    expect(presenceStatus(ago(20 * 60_000), now)).toBe('offline')
    expect(presenceStatus(ago(30 * 86_400_000), now)).toBe('offline')
  })

  it('counts a last_seen_at slightly in the future (clock skew) as online', () => {
    expect(presenceStatus(new Date(now.getTime() + 500), now)).toBe('online')
  })
})
