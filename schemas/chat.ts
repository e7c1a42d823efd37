import { Type } from '@sinclair/typebox'
import { DEMO } from '../db/seed/ids.js'
import { PRESENCE_STATUSES } from '../src/vocabulary.js'
import { Nullable, StringEnum, Timestamp, Uuid } from './common.js'
import { ACME_PRESENCE } from './examples.js'
import { BEARER_PROBLEMS, invalid, jsonResponse, Problems, routeResponses, when, withExample } from './responses.js'

export const PresenceParams = Type.Object({
  company_role_id: withExample(Uuid, DEMO.roles.betaBuyer),
  partner_company_role_id: withExample(
    Type.String({ format: 'uuid', description: 'A company role that shares a chat conversation with `company_role_id`' }),
    DEMO.roles.acmeSeller,
  ),
})

export const PresenceResponse = Type.Object({
  company_role_id: Uuid,
  status: StringEnum(PRESENCE_STATUSES, {
    description: 'Seen within 2 minutes: `online`; within 15: `away`; else, or never: `offline`',
  }),
  last_seen_at: Nullable(Timestamp),
})

export const presenceRouteSchema = {
  operationId: 'getChatPartnerPresence',
  tags: ['company'],
  summary: "A chat partner's presence",
  description:
    '`chat` permission. Presence comes from activity: every authenticated request acting for a company role marks ' +
    'it seen (at most one write per role per 30 s, so `last_seen_at` may lag by up to 30 s). `last_seen_at` is null ' +
    'when the role was never seen.',
  params: PresenceParams,
  response: routeResponses(
    {
      200: jsonResponse("The partner's presence", PresenceResponse, { acme: { summary: 'Beta buyer asks about Acme seller', value: ACME_PRESENCE } }),
    },
    [
      invalid({ partner_company_role_id: ['Must be a valid uuid.'] }, 'A path id is not a UUID'),
      ...BEARER_PROBLEMS,
      when(Problems.permissionDenied, 'The membership lacks the `chat` permission'),
      when(Problems.notFound, 'Not a member of `company_role_id`, or the partner shares no chat conversation with it'),
    ],
  ),
}
