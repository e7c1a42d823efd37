import { Counter, Gauge, type Registry } from 'prom-client'

/** How long the principal held at its limit the longest has been so; a principal's spell ends two windows after its last refusal. */
class HeldPrincipals {
  private readonly spells = new Map<string, { since: number; last: number }>()

  constructor(
    private readonly gapMs: number,
    private readonly maxPrincipals = 10_000,
  ) {}

  refused(principal: string): void {
    const now = performance.now()
    const spell = this.spells.get(principal)
    if (spell && now - spell.last <= this.gapMs) spell.last = now
    else {
      if (!spell && this.spells.size >= this.maxPrincipals) this.spells.delete(this.spells.keys().next().value!)
      this.spells.set(principal, { since: now, last: now })
    }
  }

  longestSeconds(): number {
    const now = performance.now()
    let longest = 0
    for (const [principal, spell] of this.spells) {
      if (now - spell.last > this.gapMs) this.spells.delete(principal)
      else longest = Math.max(longest, (now - spell.since) / 1000)
    }
    return longest
  }
}

/** The (class, priority) pairs routes have (src/fairness/classes.ts); `none`: docs and JWKS. */
const SHED_SERIES = [
  ['reads', 'large-read'],
  ['reads', 'read'],
  ['writes', 'write'],
  ['authentication', 'write'],
  ['authentication', 'critical'],
  ['webhooks', 'critical'],
  ['none', 'read'],
] as const

/** Limited and shed requests; no label holds a principal (the gauge says how long the longest-held one has been held). */
export class FairnessMetrics {
  readonly limited: Counter<'class' | 'reason'>
  readonly shed: Counter<'class' | 'priority' | 'reason'>
  readonly held: Counter
  private readonly heldPrincipals: HeldPrincipals

  constructor(registry: Registry, windowSeconds: number, shedding: () => { active: boolean; share: number }) {
    this.heldPrincipals = new HeldPrincipals(2 * windowSeconds * 1000)
    this.limited = new Counter({
      name: 'http_requests_limited_total',
      help: 'Requests answered 429 rate_limited, by class of route and reason: rate (a quota per window), concurrency (requests at once), address (too many 401s from the address).',
      labelNames: ['class', 'reason'] as const,
      registers: [registry],
    })
    this.shed = new Counter({
      name: 'http_requests_shed_total',
      help: 'Requests shed with 503 by this saturated instance, by class of route, priority and the measure that decided (in_flight, event_loop_delay, pool_waiting).',
      labelNames: ['class', 'priority', 'reason'] as const,
      registers: [registry],
    })
    // Every series at 0 from the start: a rate over a counter that appears with its first refusal misses that refusal.
    for (const rateClass of ['reads', 'writes', 'authentication', 'webhooks']) {
      for (const reason of ['rate', 'concurrency', 'address']) this.limited.labels(rateClass, reason).inc(0)
    }
    for (const [rateClass, priority] of SHED_SERIES) {
      for (const reason of ['in_flight', 'event_loop_delay', 'pool_waiting']) this.shed.labels(rateClass, priority, reason).inc(0)
    }
    this.held = new Counter({
      name: 'http_requests_limited_held_total',
      help: 'Refusals (429) held back up to a second because their caller sent again before its Retry-After was over.',
      registers: [registry],
    })
    const heldPrincipals = this.heldPrincipals
    new Gauge({
      name: 'rate_limit_principal_held_seconds',
      help: 'How long the principal held at its limit the longest has been refused without a pause of two windows; 0 when none is.',
      registers: [registry],
      collect() {
        this.set(heldPrincipals.longestSeconds())
      },
    })
    new Gauge({
      name: 'load_shed_pressure',
      help: "The instance's load as a share of its saturation point (LOAD_SHED): reads are shed from 0.75, writes from 1.",
      registers: [registry],
      collect() {
        this.set(shedding().share)
      },
    })
    new Gauge({
      name: 'load_shed_active',
      help: '1 while the instance sheds requests (readiness answers 503), else 0.',
      registers: [registry],
      collect() {
        this.set(shedding().active ? 1 : 0)
      },
    })
  }

  principalRefused(principal: string): void {
    this.heldPrincipals.refused(principal)
  }
}
