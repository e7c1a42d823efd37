import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { FairnessSettings } from '../config.js'
import type { Priority } from './classes.js'

/**
 * The share of the saturation point at which each priority is shed: large reads from half of it,
 * other reads from three quarters, writes at it; token refresh and the webhook only at twice
 * the point, health checks never.
 */
const SHED_AT: Record<Priority, number> = { 'large-read': 0.5, read: 0.75, write: 1, critical: 2, health: Number.POSITIVE_INFINITY }

/**
 * The event-loop delay: each interval's 99th percentile, and the least of the last few, so that
 * only a sustained delay (a second of it) sheds, not one stall (a compilation, a GC).
 */
const SAMPLE_MS = 200
const SUSTAINED_SAMPLES = 5
/** The instance says it sheds (readiness) for so long after its last shed request. */
const SHEDDING_MS = 2_000

export type ShedReason = 'in_flight' | 'event_loop_delay' | 'pool_waiting'

/**
 * Load shedding by this instance's own measures: requests in flight, event-loop delay, requests
 * waiting for a database connection. Each is a share of its limit (LOAD_SHED); the largest decides.
 */
export class LoadShedder {
  private inFlight = 0
  private readonly delays: number[] = []
  private lastShedAt = Number.NEGATIVE_INFINITY
  private readonly histogram: ReturnType<typeof monitorEventLoopDelay>
  private readonly timer: NodeJS.Timeout

  constructor(
    private readonly limits: NonNullable<FairnessSettings['shed']>,
    private readonly poolWaiting: () => number,
    /** False on the embedded database: its queries run on the event loop, whose delay is then theirs. */
    private readonly watchEventLoop: boolean,
  ) {
    this.histogram = monitorEventLoopDelay({ resolution: 10 })
    this.histogram.enable()
    this.timer = setInterval(() => {
      this.delays.push(this.histogram.percentile(99) / 1e6)
      if (this.delays.length > SUSTAINED_SAMPLES) this.delays.shift()
      this.histogram.reset()
    }, SAMPLE_MS).unref()
  }

  /** The measure nearest its limit, and its share of it. */
  pressure(): { reason: ShedReason; share: number } {
    const shares: [ShedReason, number][] = [
      ['in_flight', this.inFlight / this.limits.inFlight],
      ['event_loop_delay', this.watchEventLoop ? this.sustainedDelayMs() / this.limits.eventLoopDelayMs : 0],
      ['pool_waiting', this.poolWaiting() / this.limits.poolWaiting],
    ]
    const [reason, share] = shares.reduce((top, one) => (one[1] > top[1] ? one : top))
    return { reason, share }
  }

  private sustainedDelayMs(): number {
    return this.delays.length < SUSTAINED_SAMPLES ? 0 : Math.min(...this.delays)
  }

  /** A request begins: undefined when admitted (it then counts in flight until `ended`), else why it is shed. */
  admit(priority: Priority): ShedReason | undefined {
    const { reason, share } = this.pressure()
    if (share >= SHED_AT[priority]) {
      this.lastShedAt = performance.now()
      return reason
    }
    this.inFlight += 1
    return undefined
  }

  ended(): void {
    this.inFlight -= 1
  }

  /** Whether the instance shed a request within the last seconds (readiness answers 503 meanwhile). */
  get shedding(): boolean {
    return performance.now() - this.lastShedAt < SHEDDING_MS
  }

  get requestsInFlight(): number {
    return this.inFlight
  }

  stop(): void {
    clearInterval(this.timer)
    this.histogram.disable()
  }
}
