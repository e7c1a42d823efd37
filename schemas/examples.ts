import { DEMO } from '../db/seed/ids.js'

/**
 * Example values for the OpenAPI document, taken from the demo data (docs/demo-data.md, db/seed): the
 * ids, names and tax ids a partner finds in a fresh embedded database, answers as the service gives
 * them (the conformance test checks every example against its schema). Tokens are real demo tokens
 * of alice@acme.example, long expired.
 */

const { roles, companies, users, titleDocuments } = DEMO

export const DEMO_LOGIN = { email: 'alice@acme.example', password: 'Demo#2026!' }

export const DEMO_TOKENS = {
  access:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0b2tlbl90eXBlIjoiYWNjZXNzIiwiZXhwIjoxNzk1NTExNjE5LCJpYXQiOjE3OTU1MTEzMTksImp0aSI6Ijk4NTg1MGVmZWU2ODQ0ZjhiMzNmNGU4NDEyYWJiMmU3IiwidXNlcl9pZCI6IjEwMDAwMDAwLTAwMDAtNDAwMC04MDAwLTAwMDAwMDAwMDAwMSIsImZpZCI6IjFkMjZhMmM2LTkxYzctNGZhOS1hYzk5LTUxNDA0MGFiODcwMCJ9.596skR5U9ZsEc9357HzJt8IjvohXVb6bUPUwi6mMUIc',
  refresh:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0b2tlbl90eXBlIjoicmVmcmVzaCIsImV4cCI6MTc5NTU5NzcxOSwiaWF0IjoxNzk1NTExMzE5LCJqdGkiOiIyYjZjYTNmZmM0ZTM0YzlhYmI3ZTQ1YWU4ODEyMDg3NCIsInVzZXJfaWQiOiIxMDAwMDAwMC0wMDAwLTQwMDAtODAwMC0wMDAwMDAwMDAwMDEiLCJmaWQiOiIxZDI2YTJjNi05MWM3LTRmYTktYWM5OS01MTQwNDBhYjg3MDAifQ.KPJP4oyCAuKx2m50mKrME6R89huEByrum4jD2h0j7xE',
}

export const DEMO_REFRESHED = {
  access:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0b2tlbl90eXBlIjoiYWNjZXNzIiwiZXhwIjoxNzk1NTExNjE5LCJpYXQiOjE3OTU1MTEzMTksImp0aSI6ImQzZDE1OWNlMzNkMDQ5NmVhOWVmMDY5MTcwZTE3ODMwIiwidXNlcl9pZCI6IjEwMDAwMDAwLTAwMDAtNDAwMC04MDAwLTAwMDAwMDAwMDAwMSIsImZpZCI6IjFkMjZhMmM2LTkxYzctNGZhOS1hYzk5LTUxNDA0MGFiODcwMCJ9.abKp_AjTZ6OFOXAPQyRP-sCAUq8koLvhKNsJFD0zYSk',
  refresh:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0b2tlbl90eXBlIjoicmVmcmVzaCIsImV4cCI6MTc5NTU5NzcxOSwiaWF0IjoxNzk1NTExMzE5LCJqdGkiOiJmYzUzZWVjYTFkYTM0MDljODExMDA3NzQxMGI3ZmRmYiIsInVzZXJfaWQiOiIxMDAwMDAwMC0wMDAwLTQwMDAtODAwMC0wMDAwMDAwMDAwMDEiLCJmaWQiOiIxZDI2YTJjNi05MWM3LTRmYTktYWM5OS01MTQwNDBhYjg3MDAifQ.hMfL40SuWYVFVzQQu7V2LL9kxO3NKxSbI7LA8e2Y5n0',
}

export const ALICE = {
  id: users.alice,
  email: 'alice@acme.example',
  name: 'Alice Almeida',
  last_login: '2026-11-24T09:08:39.200Z',
}

export const ACME_COMPANIES = [
  {
    id: companies.acme,
    name: 'Acme Indústria Ltda',
    trade_name: 'Acme',
    tax_id: '11222333000181',
    roles: [{ company_role_id: roles.acmeSeller, role: 'seller' as const, permissions: ['admin' as const] }],
  },
]

export const DELTA_COMPANIES = [
  {
    id: companies.delta,
    name: 'Delta Participações S.A.',
    trade_name: 'Delta',
    tax_id: '12ABC34501DE35',
    roles: [
      { company_role_id: roles.deltaBuyer, role: 'buyer' as const, permissions: ['admin' as const] },
      { company_role_id: roles.deltaSeller, role: 'seller' as const, permissions: ['admin' as const] },
    ],
  },
]

const KYC_UPDATED = '2026-11-24T09:08:39.091Z'

/** Beta buyer (bob) checks Acme seller: every type approved but the expired balance sheet. */
export const ACME_CHECK_DOCUMENTS = {
  seller_id: roles.acmeSeller,
  company: { name: 'Acme Indústria Ltda', tax_id: '11222333000181' },
  complete: false,
  documents: [
    {
      type: 'articles_of_association' as const,
      status: 'approved' as const,
      document_id: 'e18893fb-4550-4d18-9ae9-6f7e170a62f6',
      valid_until: null,
      updated_at: KYC_UPDATED,
    },
    {
      type: 'cnpj_card' as const,
      status: 'approved' as const,
      document_id: 'd22ee022-4515-4955-8f35-0759e52d1d5b',
      valid_until: '2027-02-12',
      updated_at: KYC_UPDATED,
    },
    {
      type: 'partners_identification' as const,
      status: 'approved' as const,
      document_id: '0bbf98f4-0cbe-4888-8cdc-127e9dd45340',
      valid_until: null,
      updated_at: KYC_UPDATED,
    },
    {
      type: 'proof_of_address' as const,
      status: 'approved' as const,
      document_id: 'af91ffd6-a65b-4cf3-922d-7bb8cc5d5177',
      valid_until: '2027-02-12',
      updated_at: KYC_UPDATED,
    },
    {
      type: 'balance_sheet' as const,
      status: 'expired' as const,
      document_id: 'e974a0b3-96b5-4b7d-aa98-06953e8ec447',
      valid_until: '2026-10-20',
      updated_at: KYC_UPDATED,
    },
    {
      type: 'income_statement' as const,
      status: 'approved' as const,
      document_id: 'a5e7f20e-a183-4702-80d7-7f8e7e761165',
      valid_until: '2027-11-14',
      updated_at: KYC_UPDATED,
    },
    {
      type: 'revenue_statement' as const,
      status: 'approved' as const,
      document_id: 'e47d8844-16fe-45dd-92a3-5d950aff46b6',
      valid_until: '2027-02-12',
      updated_at: KYC_UPDATED,
    },
    {
      type: 'debt_clearance_certificate' as const,
      status: 'approved' as const,
      document_id: '8ff81f12-0ac3-45e6-99f2-04bd04215f3a',
      valid_until: '2027-05-13',
      updated_at: KYC_UPDATED,
    },
  ],
  open_solicitation: null,
}

export const SOLICITATION_REQUEST = { document_types: ['balance_sheet' as const], message: 'Please send the balance sheet.', due_date: '2026-12-15' }

export const SOLICITATION = {
  id: '52f8050a-5aea-47bb-81ab-433de3010719',
  buyer_company_role_id: roles.betaBuyer,
  seller_id: roles.acmeSeller,
  document_types: ['balance_sheet' as const],
  message: 'Please send the balance sheet.',
  due_date: '2026-12-15',
  status: 'open' as const,
  created_at: '2026-11-24T09:08:39.319Z',
}

/** Beta buyer asks about Acme seller, which shares a chat conversation with it. */
export const ACME_PRESENCE = { company_role_id: roles.acmeSeller, status: 'away' as const, last_seen_at: '2026-11-24T09:03:39.038Z' }

/** Title 1 of Acme, as Acme seller (alice) sees it. */
export const TITLE_1_DOCUMENTS = [
  {
    id: titleDocuments.t1Invoice,
    kind: 'invoice' as const,
    filename: 'nf-1001.pdf',
    content_type: 'application/pdf',
    size_bytes: 48213,
    sha256: '6000000000004000800000000000000100000000000000000000000000000000',
    uploaded_at: '2026-11-21T09:08:39.038Z',
    signature: null,
  },
  {
    id: titleDocuments.t1NfeXml,
    kind: 'nfe_xml' as const,
    filename: 'nf-1001.xml',
    content_type: 'application/xml',
    size_bytes: 9877,
    sha256: '6000000000004000800000000000000200000000000000000000000000000000',
    uploaded_at: '2026-11-21T09:08:39.038Z',
    signature: null,
  },
  {
    id: titleDocuments.t1Contract,
    kind: 'assignment_contract' as const,
    filename: 'cessao-nf-1001.pdf',
    content_type: 'application/pdf',
    size_bytes: 120554,
    sha256: '6000000000004000800000000000000300000000000000000000000000000000',
    uploaded_at: '2026-11-21T09:08:39.038Z',
    signature: {
      envelope_key: 'demo-envelope-0001',
      status: 'pending' as const,
      completed_at: null,
      signers: [
        { name: 'Alice Almeida', email: 'alice@acme.example', status: 'pending' as const, signed_at: null },
        { name: 'Bob Barros', email: 'bob@beta.example', status: 'pending' as const, signed_at: null },
      ],
    },
  },
]

export const NEW_CUSTOMER_ID = '70000000-0000-4000-8000-000000000009'

export const CUSTOMER_REQUEST = {
  name: 'Zeta Distribuidora Ltda',
  tax_id: '11.444.777/0001-61',
  email: 'financeiro@zeta.example',
  phone: '+55 11 98765-4321',
}

export const CUSTOMER = {
  id: NEW_CUSTOMER_ID,
  company_role_id: roles.acmeSeller,
  name: 'Zeta Distribuidora Ltda',
  tax_id: '11444777000161',
  tax_id_type: 'cnpj' as const,
  email: 'financeiro@zeta.example',
  phone: '+5511987654321',
  created_at: '2026-11-24T09:08:39.326Z',
  updated_at: '2026-11-24T09:08:39.326Z',
}

/** bob@beta.example signs the contract of title 1 (envelope demo-envelope-0001). */
export const SIGN_NOTIFICATION = {
  event: { name: 'sign', occurred_at: '2026-11-24T10:15:00.000Z', data: { signer: { email: 'bob@beta.example' } } },
  document: { key: 'demo-envelope-0001', status: 'running' },
}

export const CLOSE_NOTIFICATION = {
  event: { name: 'auto_close', occurred_at: '2026-11-24T10:16:00.000Z' },
  document: { key: 'demo-envelope-0001', status: 'closed' },
}

/** maria@legacy.example, migrated (old id 1042), confirming her account. */
export const MARIA = {
  id: users.maria,
  email: 'maria@legacy.example',
  name: 'Maria Moraes',
  last_login: '2026-11-24T09:20:00.000Z',
}
