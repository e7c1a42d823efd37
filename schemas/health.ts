import { Type } from '@sinclair/typebox'
import { jsonResponse, routeResponses, when, Problems } from './responses.js'

const Status = Type.Object({ status: Type.Literal('ok') })
const Ready = Type.Object({
  status: Type.Literal('ok'),
  configuration_errors: Type.Optional(
    Type.Array(Type.String(), {
      description: 'Database settings the service could not apply (a pooler refused them), each with its fix; also logged at error level.',
    }),
  ),
})
const ok = { ok: { summary: 'Healthy', value: { status: 'ok' as const } } }

export const livenessRouteSchema = {
  operationId: 'checkLiveness',
  tags: ['health'],
  summary: 'Liveness: the process answers',
  description: "Public; never touches the database. For the orchestrator's liveness probe.",
  response: routeResponses({ 200: jsonResponse('The process is up', Status, ok) }, []),
}

export const readinessRouteSchema = {
  operationId: 'checkReadiness',
  tags: ['health'],
  summary: 'Readiness: the database answers',
  description:
    "Public; runs `SELECT 1`, answered within 1 s. For the load balancer's readiness probe: take the instance out of rotation on `503`. " +
    'Answers 503 at once from SIGTERM on (the instance is draining).',
  response: routeResponses({ 200: jsonResponse('Ready to serve', Ready, ok) }, [
    when(
      { ...Problems.serviceUnavailable, detail: 'The database is not reachable.' },
      'The database cannot be reached (or does not answer within 1 s), or this instance is shutting down',
    ),
  ]),
}
