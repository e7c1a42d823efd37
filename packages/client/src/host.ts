/**
 * What the client uses of the host it runs on (Node.js 20 or newer, Deno, Bun, a browser), declared
 * here rather than taken from the DOM or Node type libraries, so that a consumer's compilation
 * needs neither: any `fetch` of this shape will do, the global one included.
 */

export interface FetchInit {
  method: string
  headers: Record<string, string>
  body?: string
}

export interface FetchResponse {
  readonly status: number
  readonly headers: { get(name: string): string | null }
  text(): Promise<string>
}

export type FetchLike = (url: string, init: FetchInit) => Promise<FetchResponse>

interface Host {
  fetch?: FetchLike
  crypto?: { randomUUID(): string }
  setTimeout(callback: () => void, ms: number): unknown
}

export const host = globalThis as unknown as Host

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => host.setTimeout(resolve, ms))
