import type { FastifyPluginAsync } from 'fastify'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import type { LogDestination } from '../../../src/logging.js'
import { useTestApp } from '../../helpers/app.js'
import { declaredRoutes } from '../../helpers/declared-routes.js'
import { testDatabase } from '../../helpers/database.js'
import { documentedStatuses, type Documented } from './contract.js'
import { fingerprinter, type Fingerprint } from './fingerprint.js'
import { authRequests, companyRequestsOf, otherRequests, platformRequests, type FuzzRequest } from './routes.js'
import { FuzzRunner } from './runner.js'
import { OLD_WEBHOOK_SECRET, WEBHOOK_HMAC_KEY, WEBHOOK_SECRET, type SecretRegistry } from './session.js'
import { scaled } from '../../helpers/slowness.js'

export type HostileGroup = 'auth' | 'company' | 'other' | 'platform'

/**
 * Property-based hostile input (test/reliability/hostile-input.test.ts) on the app's routes and
 * `extraRoutes`: the company-role group fuzzes every declared route besides the tuned ones.
 * `groups` runs only the groups named.
 */
export async function describeHostileInput(extraRoutes?: FastifyPluginAsync, groups?: readonly HostileGroup[]): Promise<void> {
  const routes = await declaredRoutes(extraRoutes)
  const lines: string[] = []
  const logDestination: LogDestination = { write: (line: string) => void lines.push(line) }

  // One address sends thousands of failed logins: the per-address login limit would soon refuse the
  // fuzzer's own sessions. No refresh grace: the model takes every spent refresh token for a replay.
  const ctx = useTestApp(
    {
      LOG_LEVEL: 'trace',
      LOGIN_FAILURES_PER_ADDRESS: '999999',
      REFRESH_REUSE_GRACE: '0',
      ESIGN_WEBHOOK_SECRETS: `${WEBHOOK_SECRET},${OLD_WEBHOOK_SECRET}`,
      ESIGN_WEBHOOK_HMAC_KEY: WEBHOOK_HMAC_KEY,
    },
    { logDestination, extraRoutes },
  )

  let documented: Documented
  let fingerprint: () => Promise<Fingerprint>

  beforeAll(async () => {
    documented = await documentedStatuses(ctx.app)
    fingerprint = await fingerprinter((await testDatabase()).db)
  })

  const replay = {
    ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}),
    ...(process.env.FUZZ_PATH ? { path: process.env.FUZZ_PATH } : {}),
  }

  async function fuzz(requests: fc.Arbitrary<FuzzRequest>, numRuns: number): Promise<FuzzRunner> {
    lines.length = 0
    const runner = await FuzzRunner.start(ctx.app, fingerprint, documented, lines)
    await fc.assert(
      fc.asyncProperty(fc.array(requests, { minLength: 1, maxLength: 10 }), (batch) => runner.run(batch)),
      { numRuns, ...replay },
    )
    return runner
  }

  /**
   * Each route got its share, and a good part of it went further than the front door (not 401, 404
   * or 415): valid tokens and well-formed ids took the generated bodies to validation and handlers.
   */
  function expectCoverage(runner: FuzzRunner, labels: string[], minimum: number): void {
    for (const label of labels) {
      const counts = [...(runner.statuses.get(label) ?? new Map<number, number>())]
      const total = counts.reduce((sum, [, count]) => sum + count, 0)
      const further = counts.filter(([status]) => ![401, 404, 415].includes(status)).reduce((sum, [, count]) => sum + count, 0)
      const report = `${label}: ${JSON.stringify(Object.fromEntries(counts))}`
      expect(total >= minimum && further > total / 6, report).toBe(true)
    }
  }

  const JWT_LIKE = /eyJ[A-Za-z0-9_-]{20,}/

  /** No log line carries a password, a token, an Authorization value or a webhook secret of the run. */
  function expectNoSecretsLogged(runner: FuzzRunner, secrets: SecretRegistry): void {
    // The check looks at real request lines (health checks log at warn only, hence not all of them).
    expect(lines.filter((line) => line.includes('incoming request')).length).toBeGreaterThan(runner.sent / 2)
    const all = lines.join('\n')
    const leaked = [...secrets.values].filter((secret) => all.includes(secret))
    const leakingLines = lines.filter((line) => JWT_LIKE.test(line) || leaked.some((secret) => line.includes(secret)))
    expect({ leaked: leaked.map((secret) => secret.slice(0, 24)), lines: leakingLines.slice(0, 3) }).toEqual({ leaked: [], lines: [] })
  }

  describe('hostile input', () => {
    const only = (name: HostileGroup) => !groups || groups.includes(name)
    const itIn = (name: HostileGroup) => (only(name) ? it : it.skip)
    const company = companyRequestsOf(routes)
    itIn('auth')(
      'routes 1–4: tokens, login, refresh and companies hold',
      async () => {
        const runner = await fuzz(authRequests, 130)
        expectCoverage(runner, ['route 1', 'route 2', 'route 3', 'route 4'], 60)
        expectNoSecretsLogged(runner, runner.session.secrets)
      },
      scaled(120_000),
    )

    itIn('company')(
      `routes 5–8 and 11: company-role routes hold${company.labels.length > 5 ? `, and ${company.labels.slice(5).join(', ')}` : ''}`,
      async () => {
        const runner = await fuzz(company.requests, 250 + 50 * (company.labels.length - 5))
        expectCoverage(runner, company.labels, 60)
        expectNoSecretsLogged(runner, runner.session.secrets)
      },
      scaled(120_000),
    )

    itIn('other')(
      'routes 9, 10 and 12: marketplace, registration and the webhook hold',
      async () => {
        const runner = await fuzz(otherRequests, 170)
        expectCoverage(runner, ['route 9', 'route 10', 'route 12'], 60)
        expectNoSecretsLogged(runner, runner.session.secrets)
      },
      scaled(120_000),
    )

    itIn('platform')(
      'health, docs, JWKS and unknown paths hold',
      async () => {
        const runner = await fuzz(platformRequests, 100)
        expect(runner.sent).toBeGreaterThan(150)
        expectNoSecretsLogged(runner, runner.session.secrets)
      },
      scaled(120_000),
    )
  })
}
