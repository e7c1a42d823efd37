/**
 * Requests sent at a steady rate from a process of their own (bench/fairness.ts): in the process of
 * a 1,000-connection flood, a trickle's requests wait behind the flood's own event loop, and an
 * answer the window ends on is neither counted nor a time-out. Reads `{ baseUrl, ratePerSecond,
 * timeoutMs, requests: [{ path, method, headers, body }] }` on stdin; writes each answer's status
 * and milliseconds (status 0: no answer within `timeoutMs`) as JSON on stdout.
 */
interface Paced {
  baseUrl: string
  ratePerSecond: number
  timeoutMs: number
  requests: { path: string; method: string; headers: Record<string, string>; body?: string }[]
}

const chunks: Buffer[] = []
for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
const { baseUrl, ratePerSecond, timeoutMs, requests } = JSON.parse(Buffer.concat(chunks).toString()) as Paced

const send = async ({ path, method, headers, body }: Paced['requests'][number]) => {
  const started = performance.now()
  try {
    const response = await fetch(baseUrl + path, { method, headers, body, signal: AbortSignal.timeout(timeoutMs) })
    await response.arrayBuffer()
    return { status: response.status, ms: performance.now() - started }
  } catch {
    return { status: 0, ms: performance.now() - started }
  }
}
const answers = requests.map(
  (request, n) => new Promise<{ status: number; ms: number }>((resolve) => setTimeout(() => resolve(send(request)), (1000 * n) / ratePerSecond)),
)
process.stdout.write(JSON.stringify(await Promise.all(answers)))
