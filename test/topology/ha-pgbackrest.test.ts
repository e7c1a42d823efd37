import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backupUnavailable, runAs, scriptPath, waitFor } from './backup.js'
import { haUnavailable, startHaCluster, type HaCluster } from './ha.js'

/**
 * deploy/ha/patroni.yml's archiving and replica creation as shipped, under Patroni, with
 * deploy/pgbackrest/pgbackrest.conf: the leader archives through archive-push (`pgbackrest check`),
 * backup.sh takes a full backup, and a reinitialized replica is restored from the repository (the
 * pgbackrest replica method, not pg_basebackup), then streams. Two nodes, the PostgreSQL run only.
 */
const unavailable = process.env.TEST_DATABASE_URL
  ? (haUnavailable() ?? backupUnavailable())
  : 'HA tests skipped: they run with TEST_DATABASE_URL (the PostgreSQL run)'
if (unavailable) process.stderr.write(`${unavailable}\n`)

describe.skipIf(unavailable !== undefined)('Patroni with pgBackRest (deploy/ha/patroni.yml, deploy/pgbackrest/)', () => {
  let cluster: HaCluster

  const onNode = async (index: number, command: string, args: string[], env: Record<string, string> = {}) => {
    const node = cluster.nodes[index]!
    const psqlEnv = { PGHOST: node.dir, PGPORT: String(node.pgPort), PGUSER: 'postgres' }
    const result = await runAs(command, args, { ...cluster.pgbackrestEnv(index), ...psqlEnv, ...env })
    if (result.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.code}:\n${result.output}\n${await cluster.logs()}`)
    return result.output
  }

  beforeAll(async () => {
    cluster = await startHaCluster(2, { pgbackrest: true })
  }, 300_000)

  afterAll(async () => {
    await cluster?.stop()
  }, 60_000)

  it('archives through pgbackrest, backs up with backup.sh, and reinit restores a replica from the repository', async () => {
    const primary = (await cluster.primary())!
    const standby = 1 - primary
    await onNode(primary, 'pgbackrest', ['--stanza=receivables', 'stanza-create'])
    // check forces a WAL switch and waits until the archive has that segment.
    await onNode(primary, 'pgbackrest', ['--stanza=receivables', 'check'])
    // The archiver counts a segment once archive_command returns, a moment after the repository has it.
    await waitFor('pg_stat_archiver counting an archived segment, none failed since', 60_000, async () => {
      const [row] = await cluster.sql<{ archived: number; failedSince: boolean }>(
        primary,
        'SELECT archived_count::int AS archived, coalesce(last_failed_time > last_archived_time, false) AS "failedSince" FROM pg_stat_archiver',
      )
      return row && row.archived > 0 && !row.failedSince ? true : undefined
    })

    const backup = await onNode(primary, 'bash', [scriptPath('backup.sh'), 'full'], { BACKUP_RECORD_DATABASE: 'postgres' })
    expect(backup).toMatch(/full backup done/)
    // Written after the backup: the restored replica gets it from the archive or by streaming.
    await cluster.sql(primary, 'CREATE TABLE after_backup AS SELECT 42 AS answer')

    const logBefore = (await cluster.patroniLog(standby)).length
    const node = cluster.nodes[standby]!
    const response = await fetch(`http://127.0.0.1:${node.apiPort}/reinitialize`, { method: 'POST', body: JSON.stringify({ force: true }) })
    expect(response.status, await response.text()).toBe(200)
    const created = await waitFor('the replica re-created', 180_000, async () => {
      const match = /replica has been created using (\w+)/.exec((await cluster.patroniLog(standby)).slice(logBefore))
      return match?.[1]
    })
    expect(created).toBe('pgbackrest')
    await cluster.waitForStandby(standby, 120_000)
    await waitFor('the table on the rebuilt replica', 60_000, async () => {
      const rows = await cluster.sql<{ answer: number }>(standby, 'SELECT answer FROM after_backup').catch(() => [])
      return rows[0]?.answer === 42 ? true : undefined
    })
  }, 400_000)
})
