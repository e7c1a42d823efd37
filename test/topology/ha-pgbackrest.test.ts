import { readdir, rm } from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backupUnavailable, runAs, scriptPath, waitFor } from './backup.js'
import { haUnavailable, startHaCluster, type HaCluster } from './ha.js'

/**
 * deploy/ha/patroni.yml's archiving and replica creation as shipped, under Patroni, with
 * deploy/pgbackrest/pgbackrest.conf: the leader archives through archive-push (`pgbackrest check`),
 * backup.sh takes a full backup, and a reinitialized replica is restored from the repository (the
 * pgbackrest replica method, not pg_basebackup), then streams; then docs/runbook.md's "After losing
 * every node", line by line. Two nodes, the PostgreSQL run only.
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

  /** patronictl as an operator types it on node `index` (CONF: its configuration). */
  const patronictl = (index: number, command: string) => {
    const { env, conf } = cluster.patroniEnv(index)
    return onNode(index, 'bash', ['-c', command.replaceAll('CONF', conf)], env)
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
    // docs/runbook.md, "Rebuilding a replica from the repository".
    await patronictl(standby, `patronictl -c CONF reinit receivables ${node.name} --force --wait`)
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

  // docs/runbook.md, "After losing every node", its commands in order (systemctl is the harness's stopNode and startNode).
  it('brings the cluster back after every node lost its data, as the runbook does: restored leader, archiving again on its new timeline, the other node rebuilt', async () => {
    const leader = (await cluster.primary())!
    await cluster.sql(leader, 'CREATE TABLE before_the_loss AS SELECT 7 AS answer')
    await onNode(leader, 'pgbackrest', ['--stanza=receivables', 'check'])

    for (const index of [0, 1]) await cluster.stopNode(index)
    for (const node of cluster.nodes) await rm(node.dataDir, { recursive: true, force: true })
    // Asks for the cluster's name, then for "Yes I am aware".
    await patronictl(0, "printf 'receivables\nYes I am aware\n' | patronictl -c CONF remove receivables")
    await onNode(0, 'bash', [scriptPath('restore.sh'), 'latest', cluster.nodes[0]!.dataDir])
    await cluster.startNode(0)
    // Patroni names it Leader while its promotion still runs, and refuses a restart until it is done.
    await waitFor('the restored node leading, out of recovery', 180_000, async () => {
      if ((await cluster.primary()) !== 0) return undefined
      const [row] = await cluster.sql<{ recovery: boolean }>(0, 'SELECT pg_is_in_recovery() AS recovery')
      return row?.recovery === false ? true : undefined
    })
    await cluster.sql(0, 'ALTER SYSTEM RESET archive_mode')
    // patronictl exits 0 when Patroni refuses ("Failed: … promote already in progress"): the runbook says to run it again.
    await waitFor('a restart Patroni accepts', 60_000, async () => {
      const restart = await patronictl(0, `patronictl -c CONF restart receivables ${cluster.nodes[0]!.name} --force`)
      return /Failed/.test(restart) ? undefined : true
    })
    await waitFor('archiving on again', 120_000, async () => {
      const [row] = await cluster.sql<{ archive_mode: string }>(0, 'SHOW archive_mode')
      return row?.archive_mode === 'on' ? true : undefined
    })
    const wal = path.join(cluster.nodes[0]!.dataDir, 'pg_wal')
    const history = (await readdir(wal))
      .filter((name) => name.endsWith('.history'))
      .sort()
      .at(-1)
    expect(history).toBeDefined()
    await onNode(0, 'pgbackrest', ['--stanza=receivables', '--no-archive-async', 'archive-push', path.join(wal, history!)])
    await cluster.startNode(1)
    await cluster.waitForStandby(1, 180_000)
    expect(await onNode(0, 'bash', [scriptPath('backup.sh'), 'full'], { BACKUP_RECORD_DATABASE: 'postgres' })).toMatch(/full backup done/)

    for (const index of [0, 1]) {
      await waitFor(`the table on node ${index}`, 60_000, async () => {
        const rows = await cluster.sql<{ answer: number }>(index, 'SELECT answer FROM before_the_loss').catch(() => [])
        return rows[0]?.answer === 7 ? true : undefined
      })
    }
    // The new timeline archives: check switches a segment and waits for it in the repository.
    await onNode(0, 'pgbackrest', ['--stanza=receivables', 'check'])
  }, 600_000)
})
