import type { FastifyInstance } from 'fastify'

/** The 503s the app counted under `cause` (service_unavailable_responses_total), undefined without the series. */
export async function unavailableCount(app: FastifyInstance, cause: string): Promise<number | undefined> {
  const series = `service_unavailable_responses_total{cause="${cause}"} `
  const line = (await app.metrics.registry.metrics()).split('\n').find((candidate) => candidate.startsWith(series))
  return line === undefined ? undefined : Number(line.slice(series.length))
}
