import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { etcdEnvironment, haproxyBinary, haproxyConfig, haproxyEnvironment, patroniEnvironment, readEnvFile } from './ha.js'

/**
 * deploy/ha/ is what test/topology/failover.test.ts runs (through test/topology/ha.ts): the files
 * and the harness name the same variables, so that neither changes without the other.
 */
const file = (name: string) => path.join('deploy/ha', name)
const nodes = [1, 2, 3].map((n) => ({ name: `pg${n}`, pgPort: 5430 + n, apiPort: 8000 + n, dataDir: `/data/${n}` }))
const haproxyEnv = haproxyEnvironment(nodes, { socket: '/run/haproxy.sock', primary: 5000, replicas: 5001 })

describe('deploy/ha/: the files the failover test runs', () => {
  it('haproxy.cfg is its own pattern for three nodes, and names exactly the variables of haproxy.env, which the harness sets', () => {
    const text = readFileSync(file('haproxy.cfg'), 'utf8')
    expect(haproxyConfig(text, 3)).toBe(text)
    expect(haproxyConfig(text, 4)).toContain('server pg4 "${PG4_ADDRESS}" check port "${PG4_PATRONI_PORT}"')
    const used = new Set([...text.matchAll(/\$\{([A-Z0-9_]+)\}/g)].map((match) => match[1]))
    expect([...used].sort()).toEqual(Object.keys(readEnvFile(file('haproxy.env'))).sort())
    expect(Object.keys(haproxyEnv).sort()).toEqual(Object.keys(readEnvFile(file('haproxy.env'))).sort())
  })

  it('patroni.env names exactly what the harness sets per node', () => {
    const env = patroniEnvironment(nodes[0]!, '127.0.0.1:2379', { superuser: 's', replication: 'r', rewind: 'w' })
    expect(Object.keys(env).sort()).toEqual(Object.keys(readEnvFile(file('patroni.env'))).sort())
  })

  it('etcd.env has every setting the harness replaces (the others it runs as they are)', () => {
    const names = Object.keys(readEnvFile(file('etcd.env')))
    for (const name of Object.keys(etcdEnvironment('/data', 2379, 2380))) expect(names).toContain(name)
  })

  const binary = haproxyBinary()
  it.skipIf(binary === undefined)(`haproxy.cfg is valid for HAProxy (haproxy -c) with haproxy.env${binary ? '' : ' (skipped: no haproxy)'}`, () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'haproxy-check-'))
    try {
      const config = path.join(dir, 'haproxy.cfg')
      writeFileSync(config, readFileSync(file('haproxy.cfg')))
      const env = { ...readEnvFile(file('haproxy.env')), HAPROXY_ADMIN_SOCKET: path.join(dir, 'admin.sock') }
      expect(execFileSync(binary!, ['-c', '-f', config], { env: { PATH: process.env.PATH ?? '', ...env } }).toString()).toContain(
        'Configuration file is valid',
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
