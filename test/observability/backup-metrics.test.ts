import { describe, expect, it } from 'vitest'
import type { BackupStatus } from '../../src/observability/backup-status.js'
import { ServiceMetrics } from '../../src/observability/metrics.js'

// The archive's and backups' gauges (issue 47) never fail or hold up a scrape: a failed or slow read
// of the database keeps the last values. test/topology/restore.test.ts scrapes them on a real archive.
const STATUS: BackupStatus = { archivedCount: 7, failedCount: 2, lastArchivedAt: 1_800_000_000, lastFailedAt: null, lastBackupAt: 1_799_990_000 }
const value = (text: string, name: string) =>
  text
    .split('\n')
    .find((line) => line.startsWith(`${name} `))
    ?.split(' ')[1]

describe('db_wal_archive_* and db_backup_* gauges', () => {
  it('export the status read, 0 for a time that never was, and keep it when a later read fails or hangs', async () => {
    const reads: (() => Promise<BackupStatus>)[] = [
      async () => STATUS,
      async () => {
        throw new Error('connection refused')
      },
      () => new Promise<BackupStatus>(() => undefined),
    ]
    const metrics = new ServiceMetrics()
    metrics.backupStatus(() => reads.shift()!(), { maxAgeMs: 0, timeoutMs: 200 })
    const scrapes: string[] = []
    for (let scrape = 0; scrape < 3; scrape++) {
      const started = Date.now()
      scrapes.push(await metrics.registry.metrics())
      expect(Date.now() - started).toBeLessThan(1_500)
    }
    for (const text of scrapes) {
      expect(value(text, 'db_wal_archive_archived_count')).toBe('7')
      expect(value(text, 'db_wal_archive_failed_count')).toBe('2')
      expect(value(text, 'db_wal_archive_last_archived_timestamp_seconds')).toBe('1800000000')
      expect(value(text, 'db_wal_archive_last_failed_timestamp_seconds')).toBe('0')
      expect(value(text, 'db_backup_last_success_timestamp_seconds')).toBe('1799990000')
    }
  })

  it('read the database at most once per interval, however many scrapes', async () => {
    let count = 0
    const metrics = new ServiceMetrics()
    metrics.backupStatus(async () => (count++, STATUS), { maxAgeMs: 60_000, timeoutMs: 1_000 })
    await Promise.all(Array.from({ length: 20 }, () => metrics.registry.metrics()))
    await metrics.registry.metrics()
    expect(count).toBe(1)
  })
})
