import type { FastifyInstance } from 'fastify'

/** The 503s the app counted under `cause` (service_unavailable_responses_total), undefined without the series. */
export async function unavailableCount(app: FastifyInstance, cause: string): Promise<number | undefined> {
  const series = `service_unavailable_responses_total{cause="${cause}"} `
  const line = (await app.metrics.registry.metrics()).split('\n').find((candidate) => candidate.startsWith(series))
  return line === undefined ? undefined : Number(line.slice(series.length))
}

/** The reads the app counted on `target` for `reason` (db_reads_total), 0 without the series. */
export async function readsBy(app: FastifyInstance, target: string, reason: string): Promise<number> {
  const line = (await app.metrics.registry.metrics())
    .split('\n')
    .find((each) => each.startsWith(`db_reads_total{target="${target}",reason="${reason}"}`))
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0
}
