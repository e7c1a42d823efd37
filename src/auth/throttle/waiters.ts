/**
 * Attempts of this instance waiting for attempts in flight on their keys, woken as soon as an
 * attempt on one of those keys ends here; another instance's attempts end unseen, hence the timeout.
 */
export class Waiters {
  private readonly byKey = new Map<string, Set<() => void>>()

  /** Resolves when an attempt on one of `keys` ends on this instance, or after `timeoutMs` (another instance's). */
  nextEnd(keys: string[], timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer)
        for (const key of keys) {
          const waiting = this.byKey.get(key)
          waiting?.delete(wake)
          if (waiting?.size === 0) this.byKey.delete(key)
        }
        resolve()
      }
      const timer = setTimeout(wake, timeoutMs)
      for (const key of keys) this.byKey.set(key, (this.byKey.get(key) ?? new Set()).add(wake))
    })
  }

  /** An attempt on `keys` ended: every waiter on one of them tries again. */
  wake(keys: string[]): void {
    for (const key of keys) for (const wake of [...(this.byKey.get(key) ?? [])]) wake()
  }
}
