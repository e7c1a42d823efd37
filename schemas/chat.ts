import { Type } from '@sinclair/typebox'
import { Errors, Nullable, StringEnum, Timestamp, Uuid } from './common.js'

export const PresenceParams = Type.Object({
  company_role_id: Uuid,
  partner_company_role_id: Type.String({ format: 'uuid', description: 'A company role that shares a chat conversation with `company_role_id`' }),
})

export const PresenceResponse = Type.Object({
  company_role_id: Uuid,
  status: StringEnum(['online', 'away', 'offline'], {
    description: 'Seen within 2 minutes: `online`; within 15: `away`; else, or never: `offline`',
  }),
  last_seen_at: Nullable(Timestamp),
})

export const presenceRouteSchema = {
  tags: ['company'],
  summary: "A chat partner's presence",
  description:
    '`chat` permission. Presence comes from activity: every authenticated request acting for a company role marks ' +
    'it seen (at most one write per role per 30 s, so `last_seen_at` may lag by up to 30 s). `last_seen_at` is null ' +
    'when the role was never seen.',
  params: PresenceParams,
  response: {
    200: PresenceResponse,
    400: Errors[400],
    401: Errors[401],
    403: Errors[403],
    404: Type.Ref('Problem', {
      description: '`not_found`: not a member of `company_role_id`, or the partner shares no chat conversation with it',
    }),
    503: Errors[503],
  },
}
