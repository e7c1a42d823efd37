import type { FastifyInstance, InjectOptions } from 'fastify'
import { contractViolation, type Documented } from './contract.js'
import { changedTables, type Fingerprint } from './fingerprint.js'
import type { FuzzRequest } from './routes.js'
import { FuzzSession, OLD_WEBHOOK_SECRET, WEBHOOK_HMAC_KEY, WEBHOOK_SECRET, type Resolved } from './session.js'

const describeRequest = (request: FuzzRequest): string => `${request.method} ${request.url.slice(0, 160)}${request.url.length > 160 ? '…' : ''}`

/**
 * Sends generated requests one after another and checks each answer against the contract, and
 * the database against its fingerprint: it must not change while requests are refused.
 *
 * The fingerprint is taken before every request that could succeed (or legitimately change data
 * while refused: a replayed refresh token revokes its family), after every such request (the new
 * baseline), and at the end of each batch. So each window of refused requests between two
 * checkpoints is checked as a whole, at a fraction of the cost of one query per request.
 */
export class FuzzRunner {
  /** Statuses per route label, for the coverage check. */
  readonly statuses = new Map<string, Map<number, number>>()
  readonly session: FuzzSession
  private baseline: Fingerprint = {}
  private window: FuzzRequest[] = []

  private constructor(
    private readonly app: FastifyInstance,
    private readonly fingerprint: () => Promise<Fingerprint>,
    private readonly documented: Documented,
    private readonly logLines: readonly string[],
  ) {
    this.session = new FuzzSession(app)
  }

  static async start(
    app: FastifyInstance,
    fingerprint: () => Promise<Fingerprint>,
    documented: Documented,
    logLines: readonly string[],
  ): Promise<FuzzRunner> {
    const runner = new FuzzRunner(app, fingerprint, documented, logLines)
    await runner.session.start()
    runner.baseline = await fingerprint()
    return runner
  }

  get sent(): number {
    return [...this.statuses.values()].reduce((sum, counts) => sum + [...counts.values()].reduce((a, b) => a + b, 0), 0)
  }

  /** One fast-check run: a batch of requests. Throws on the first broken promise. */
  async run(requests: FuzzRequest[]): Promise<void> {
    if (this.session.needsNewRotation) {
      await this.session.renewRotation()
      await this.rebaseline()
    }
    try {
      for (const request of requests) await this.send(request)
      await this.checkpoint()
    } catch (error) {
      // fast-check shrinks by running smaller cases: each must start from the state as it is now.
      await this.rebaseline()
      throw error
    }
  }

  private async send(request: FuzzRequest): Promise<void> {
    const resolved = this.session.resolve(request)
    if (request.mayPass || resolved.replaysSpentRefresh) await this.checkpoint()
    const response = await this.app.inject(injectOptions(request, resolved))
    this.count(request.label, response.statusCode)
    const violation = contractViolation(request, response, this.documented, [WEBHOOK_SECRET, OLD_WEBHOOK_SECRET, WEBHOOK_HMAC_KEY])
    if (violation) {
      const requestId = String(response.headers['x-request-id'])
      const errors = this.logLines.filter((line) => line.includes(requestId) && /"level":(50|60)/.test(line))
      throw new Error(
        `${request.label}: ${violation}\n  request: ${describeRequest(request)}\n  body: ${String(resolved.payload).slice(0, 300)}` +
          `\n  answer: ${response.statusCode} ${response.body.slice(0, 300)}${errors.map((line) => `\n  log: ${line.slice(0, 800)}`).join('')}`,
      )
    }
    this.session.learn(resolved, response.statusCode, response.body)
    if (response.statusCode < 300 || resolved.replaysSpentRefresh) {
      // A success changes data, and so does a replayed refresh token (its family is revoked, §2).
      await this.rebaseline()
    } else {
      this.window.push(request)
    }
  }

  private async rebaseline(): Promise<void> {
    this.baseline = await this.fingerprint()
    this.window = []
  }

  private async checkpoint(): Promise<void> {
    const now = await this.fingerprint()
    const changed = changedTables(this.baseline, now)
    if (changed.length > 0) {
      const requests = this.window.map((request) => `  ${request.label}: ${describeRequest(request)}`).join('\n')
      throw new Error(`refused requests changed ${changed.join(', ')}; one of:\n${requests}`)
    }
    this.window = []
  }

  private count(label: string, status: number): void {
    const counts = this.statuses.get(label) ?? new Map<number, number>()
    counts.set(status, (counts.get(status) ?? 0) + 1)
    this.statuses.set(label, counts)
  }
}

function injectOptions(request: FuzzRequest, resolved: Resolved): InjectOptions {
  return {
    method: request.method as InjectOptions['method'],
    url: resolved.url,
    headers: resolved.headers,
    ...(resolved.payload === undefined ? {} : { payload: resolved.payload }),
  }
}
