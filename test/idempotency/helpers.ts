import { randomUUID } from 'node:crypto'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import { bearer, DEMO } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

export const newKey = (): string => randomUUID()

export const solicitationUrl = (sellerId: string = DEMO.roles.acmeSeller, roleId: string = DEMO.roles.betaBuyer) =>
  `/api/company/v1/${roleId}/document-solicitation/${sellerId}`

/** A valid CNPJ from a number: its 12 digits and the two check digits. */
export function cnpj(n: number): string {
  const digits = String(n).padStart(12, '0').split('').map(Number)
  for (const weights of [
    [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2],
    [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2],
  ]) {
    const rest = weights.reduce((sum, weight, index) => sum + weight * digits[index]!, 0) % 11
    digits.push(rest < 2 ? 0 : 11 - rest)
  }
  return digits.join('')
}

export const customerUrl = (id: string, roleId: string = DEMO.roles.acmeSeller) => `/api/company/v1/${roleId}/customers/${id}`

/** A POST with a bearer token and, when given, an Idempotency-Key. */
export function post(app: FastifyInstance, url: string, token: string | undefined, payload: object, key?: string): Promise<LightMyRequestResponse> {
  const headers = { ...(token ? bearer(token) : {}), ...(key === undefined ? {} : { 'idempotency-key': key }) }
  return app.inject({ method: 'POST', url, headers, payload })
}

export const isReplay = (response: LightMyRequestResponse): boolean => response.headers['idempotent-replayed'] === 'true'

const db = async () => (await testDatabase()).db

export async function openSolicitations(sellerId: string = DEMO.roles.acmeSeller): Promise<number> {
  const rows = await (
    await db()
  )
    .selectFrom('document_solicitations')
    .select('id')
    .where('seller_company_role_id', '=', sellerId)
    .where('status', '=', 'open')
    .execute()
  return rows.length
}

/** The kept keys' statuses: a row names its key by a digest only (migration 0013). */
export async function keptKeys(): Promise<Array<{ status: number }>> {
  return (await db()).selectFrom('idempotency_keys').select(['status']).execute()
}

/** Each answer as `status[ replay][ code]`, for assertions that print the whole set. */
export const statusesOf = (responses: LightMyRequestResponse[]): string[] =>
  responses.map((response) => `${response.statusCode}${isReplay(response) ? ' replay' : ''} ${response.json<{ code?: string }>().code ?? ''}`.trim())

/** Concurrent requests with one key: exactly one ran (201), every other replayed it or found it in use (409). */
export function expectRanOnce(responses: LightMyRequestResponse[]): void {
  const statuses = statusesOf(responses)
  expect(
    statuses.filter((status) => status === '201'),
    statuses.join(', '),
  ).toHaveLength(1)
  expect(
    statuses.every((status) => ['201', '201 replay', '409 idempotency_key_in_use'].includes(status)),
    statuses.join(', '),
  ).toBe(true)
}
