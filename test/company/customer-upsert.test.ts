import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { bearer, DEMO, perTestTokens, problemOf, useTestApp } from '../helpers/app.js'
import { testDatabase } from '../helpers/database.js'

const context = useTestApp()
const { customers, roles } = DEMO
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const url = (roleId: string, id: string) => `/api/company/v1/${roleId}/customers/${id}`
const db = async () => (await testDatabase()).db
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const tokenOf = perTestTokens(context)

interface Options {
  roleId?: string
  email?: string
  headers?: Record<string, string>
}

async function save(id: string, payload: unknown, { roleId = roles.acmeSeller, email = 'alice@acme.example', headers = {} }: Options = {}) {
  const authorization = 'authorization' in headers ? {} : bearer(await tokenOf(email))
  return context.app.inject({ method: 'POST', url: url(roleId, id), headers: { ...authorization, ...headers }, payload: payload as object })
}

interface CustomerBody {
  id: string
  company_role_id: string
  name: string
  tax_id: string
  tax_id_type: string
  email: string | null
  phone: string | null
  created_at: string
  updated_at: string
}

const storedOf = async (roleId: string, id: string) =>
  (await db()).selectFrom('customers').selectAll().where('company_role_id', '=', roleId).where('id', '=', id).executeTakeFirst()
const stored = async (id: string) => storedOf(roles.acmeSeller, id)
const countByTaxId = async (roleId: string, taxId: string) =>
  (await (await db()).selectFrom('customers').select('id').where('company_role_id', '=', roleId).where('tax_id', '=', taxId).execute()).length

const zeta = { name: 'Zeta Comércio', tax_id: '12.345.678/9012-34' }
// Valid ids no demo customer has: a CPF, a numeric CNPJ, the alphanumeric example CNPJ.
const CPF = '123.456.789-09'
const CNPJ = '11.222.333/0002-62'
const ALPHANUMERIC = '12.abc.345/01de-35'

describe('POST /api/company/v1/{company_role_id}/customers/{id}', () => {
  it('creates a customer: 201 with the stored record, tax id normalised and classified', async () => {
    const id = randomUUID()
    const response = await save(id, { name: '  Maria Souza  ', tax_id: CPF, email: ' maria@example.com ', phone: '+55 (11) 98765-4321' })
    expect(response.statusCode).toBe(201)
    const body = response.json<CustomerBody>()
    expect(Object.keys(body).sort()).toEqual(['company_role_id', 'created_at', 'email', 'id', 'name', 'phone', 'tax_id', 'tax_id_type', 'updated_at'])
    expect(body).toMatchObject({
      id,
      company_role_id: roles.acmeSeller,
      name: 'Maria Souza',
      tax_id: '12345678909',
      tax_id_type: 'cpf',
      email: 'maria@example.com',
      phone: '+5511987654321',
    })
    expect(body.created_at).toMatch(ISO)
    expect(body.updated_at).toBe(body.created_at)
    expect(Math.abs(Date.parse(body.created_at) - Date.now())).toBeLessThan(60_000)
    expect(await stored(id)).toMatchObject({ company_role_id: roles.acmeSeller, tax_id: '12345678909', tax_id_type: 'cpf' })
  })

  it('accepts a CNPJ, numeric or alphanumeric (in lower case too), and stores absent contacts as null', async () => {
    const numeric = (await save(randomUUID(), { name: 'Numeric', tax_id: CNPJ })).json<CustomerBody>()
    expect(numeric).toMatchObject({ tax_id: '11222333000262', tax_id_type: 'cnpj', email: null, phone: null })
    const alphanumeric = await save(randomUUID(), { name: 'Alpha', tax_id: ALPHANUMERIC, email: null, phone: null })
    expect(alphanumeric.statusCode).toBe(201)
    expect(alphanumeric.json<CustomerBody>()).toMatchObject({ tax_id: '12ABC34501DE35', tax_id_type: 'cnpj', email: null, phone: null })
  })

  it('answers a replay of the same body with 201 and the same record, updated_at unchanged', async () => {
    const id = randomUUID()
    const payload = { name: 'Replay Ltda', tax_id: CNPJ, email: 'a@replay.example' }
    const first = (await save(id, payload)).json<CustomerBody>()
    await pause(20)
    const again = await save(id, payload)
    expect(again.statusCode).toBe(201)
    expect(again.json()).toEqual(first)
  })

  it('updates name, email and phone under the same id: created_at kept, updated_at moves', async () => {
    const id = randomUUID()
    const first = (await save(id, { name: 'Old Name', tax_id: CNPJ, email: 'old@example.com', phone: '+551130000000' })).json<CustomerBody>()
    await pause(20)
    const response = await save(id, { name: 'New Name', tax_id: '11222333000262', email: 'new@example.com' })
    expect(response.statusCode).toBe(201)
    const updated = response.json<CustomerBody>()
    expect(updated).toMatchObject({ id, name: 'New Name', email: 'new@example.com', phone: null, created_at: first.created_at })
    expect(Date.parse(updated.updated_at)).toBeGreaterThan(Date.parse(first.updated_at))
  })

  it('updates a demo customer, whose tax id may be sent with punctuation', async () => {
    const response = await save(customers.acmeCompany, { name: 'Zeta Distribuidora S.A.', tax_id: '45.678.912/0001-55' })
    expect(response.statusCode).toBe(201)
    expect(response.json<CustomerBody>()).toMatchObject({ id: customers.acmeCompany, name: 'Zeta Distribuidora S.A.', email: null })
  })

  it('answers 409 tax_id_immutable to another tax id under an existing id, and changes nothing', async () => {
    const body = problemOf(await save(customers.acmePerson, { name: 'João da Silva', tax_id: CPF }), 409, 'tax_id_immutable')
    expect(body.current_tax_id).toBe('52998224725')
    expect(await stored(customers.acmePerson)).toMatchObject({ tax_id: '52998224725', name: 'João da Silva' })
    // Also when the new tax id is another customer's: the id's own tax id is the conflict.
    problemOf(await save(customers.acmePerson, { name: 'João', tax_id: '45678912000155' }), 409, 'tax_id_immutable')
  })

  it("answers 409 duplicate_customer to a new id with another customer's tax id, naming that customer", async () => {
    const id = randomUUID()
    const body = problemOf(await save(id, { name: 'Copy', tax_id: '529.982.247-25' }), 409, 'duplicate_customer')
    expect(body.customer_id).toBe(customers.acmePerson)
    expect(await stored(id)).toBeUndefined()
  })

  it("lets another seller have a customer with the same tax id as Acme's", async () => {
    const response = await save(randomUUID(), { name: 'Zeta', tax_id: '45678912000155' }, { roleId: roles.gammaSeller, email: 'carol@gamma.example' })
    expect(response.statusCode).toBe(201)
  })

  it("treats an id another role uses as the caller's own new customer, and leaves the other alone", async () => {
    const gammaBefore = await storedOf(roles.gammaSeller, customers.gammaCompany)
    const mine = await save(customers.gammaCompany, { name: 'Mine', tax_id: '98765432100060' })
    expect(mine.statusCode).toBe(201)
    expect(mine.json()).toMatchObject({ id: customers.gammaCompany, company_role_id: roles.acmeSeller, name: 'Mine' })
    // A replay updates Acme's own row, never Gamma's.
    expect((await save(customers.gammaCompany, { name: 'Mine, renamed', tax_id: '98765432100060' })).statusCode).toBe(201)
    expect(await storedOf(roles.gammaSeller, customers.gammaCompany)).toEqual(gammaBefore)
    expect(await storedOf(roles.acmeSeller, customers.gammaCompany)).toMatchObject({ name: 'Mine, renamed' })
  })

  it('answers the same to an id another role uses as to an unused one: nothing tells them apart', async () => {
    const used = await save(customers.deltaCompany, { name: 'Probe', tax_id: CNPJ })
    const unused = await save(randomUUID(), { name: 'Probe', tax_id: CPF })
    expect([used.statusCode, unused.statusCode]).toEqual([201, 201])
  })

  it('lets 20 sellers claim one id at once, each getting its own customer', async () => {
    const id = randomUUID()
    const sellers = [
      { roleId: roles.acmeSeller, email: 'alice@acme.example' },
      { roleId: roles.gammaSeller, email: 'carol@gamma.example' },
    ]
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, index) => save(id, { name: `Race ${index % 2}`, tax_id: CPF }, sellers[index % 2])),
    )
    expect(answers.map((answer) => answer.statusCode)).toEqual(Array(20).fill(201))
    const rows = await (await db()).selectFrom('customers').select('company_role_id').where('id', '=', id).execute()
    expect(rows.map((row) => row.company_role_id).sort()).toEqual([roles.acmeSeller, roles.gammaSeller].sort())
  })

  it('answers 404 to a role the caller is not a member of, or that does not exist', async () => {
    problemOf(await save(randomUUID(), zetaValid(), { roleId: roles.gammaSeller }), 404, 'not_found')
    problemOf(await save(randomUUID(), zetaValid(), { roleId: randomUUID() }), 404, 'not_found')
  })

  it('answers 403 wrong_role to a buyer role and 403 permission_denied without customers', async () => {
    problemOf(await save(randomUUID(), zetaValid(), { roleId: roles.deltaBuyer, email: 'dave@delta.example' }), 403, 'wrong_role')
    problemOf(await save(randomUUID(), zetaValid(), { email: 'erin@acme.example' }), 403, 'permission_denied')
  })

  it('answers 401 without a token and with a bad one', async () => {
    const anonymous = await context.app.inject({ method: 'POST', url: url(roles.acmeSeller, randomUUID()), payload: zetaValid() })
    problemOf(anonymous, 401, 'not_authenticated')
    problemOf(await save(randomUUID(), zetaValid(), { headers: { authorization: 'Bearer not.a.token' } }), 401, 'token_not_valid')
  })

  it('answers 400 invalid with errors.tax_id to bad check digits or a bad shape', async () => {
    const cases: Record<string, string> = {
      'a CPF with a wrong check digit': '529.982.247-24',
      'a CPF of repeated digits': '111.111.111-11',
      'a CNPJ with a wrong check digit': '11.222.333/0001-82',
      'an alphanumeric CNPJ with a wrong check digit': '12.ABC.345/01DE-36',
      'a made-up id': zeta.tax_id,
      'too short': '1234',
      'letters in the check digits': '12ABC34501DEAB',
    }
    for (const [name, taxId] of Object.entries(cases)) {
      const id = randomUUID()
      const body = problemOf(await save(id, { name: 'X', tax_id: taxId }), 400, 'invalid')
      expect({ name, fields: Object.keys(body.errors as object) }).toEqual({ name, fields: ['tax_id'] })
      expect(await stored(id)).toBeUndefined()
    }
  })

  it('answers 400 invalid per field to a bad e-mail, phone and name, and to missing fields', async () => {
    const errorsOf = async (payload: unknown) => Object.keys(problemOf(await save(randomUUID(), payload), 400, 'invalid').errors as object).sort()
    expect(await errorsOf({ ...zetaValid(), email: 'not-an-email' })).toEqual(['email'])
    expect(await errorsOf({ ...zetaValid(), email: '' })).toEqual(['email'])
    expect(await errorsOf({ ...zetaValid(), phone: '11987654321' })).toEqual(['phone'])
    expect(await errorsOf({ ...zetaValid(), phone: 'call me' })).toEqual(['phone'])
    expect(await errorsOf({ ...zetaValid(), name: '   ' })).toEqual(['name'])
    expect(await errorsOf({ ...zetaValid(), name: 'x'.repeat(201) })).toEqual(['name'])
    expect(await errorsOf({ tax_id: CNPJ })).toEqual(['name'])
    expect(await errorsOf({ name: 'X' })).toEqual(['tax_id'])
    expect(await errorsOf({ name: 'X', tax_id: 12345678909 })).toEqual(['tax_id'])
    expect(await errorsOf({ name: 'X', tax_id: '529.982.247-24', phone: '123' })).toEqual(['phone', 'tax_id'])
  })

  it('answers 400 invalid, not 500, to a NUL character that PostgreSQL cannot store, and stores nothing', async () => {
    for (const field of ['name', 'email', 'phone'] as const) {
      const id = randomUUID()
      const value = { name: 'Zeta\u0000Ltda', email: 'pay\u0000@zeta.example', phone: '+55119876\u000054321' }[field]
      const response = await save(id, { ...zetaValid(), [field]: value })
      // The schema or the rule catches some; the database finds the rest (then without a field path).
      expect({ field, status: response.statusCode, code: response.json().code }).toEqual({ field, status: 400, code: 'invalid' })
      expect(await stored(id)).toBeUndefined()
    }
  })

  it('answers 400 invalid with the field to a lone surrogate, stores nothing, and keeps a surrogate pair whole', async () => {
    const id = randomUUID()
    const body = problemOf(await save(id, { ...zetaValid(), name: 'Zeta \udc00 Ltda' }), 400, 'invalid')
    expect(body.errors).toEqual({ name: ['Text must be valid Unicode: a lone surrogate (\\ud800–\\udfff) is not a character.'] })
    expect(await stored(id)).toBeUndefined()
    expect((await save(id, { ...zetaValid(), name: 'Zeta \ud83d\ude00 Ltda' })).statusCode).toBe(201)
    expect((await stored(id))?.name).toBe('Zeta 😀 Ltda')
  })

  it('answers 400 to a malformed id and 415 to a body that is not JSON', async () => {
    expect(Object.keys(problemOf(await save('not-a-uuid', zetaValid()), 400, 'invalid').errors as object)).toEqual(['id'])
    const form = await context.app.inject({
      method: 'POST',
      url: url(roles.acmeSeller, randomUUID()),
      headers: { ...bearer(await tokenOf('alice@acme.example')), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'name=X',
    })
    problemOf(form, 415, 'unsupported_media_type')
  })
})

// Each race runs a few times: one run may happen not to overlap on a real server.
describe('concurrent saves', { repeats: 4 }, () => {
  it('of the same new id: both 201 with the same record, one row', async () => {
    const id = randomUUID()
    const payload = { name: 'Race Ltda', tax_id: CNPJ }
    const responses = await Promise.all([save(id, payload), save(id, payload), save(id, payload)])
    expect(responses.map((response) => response.statusCode)).toEqual([201, 201, 201])
    const [first, ...others] = responses.map((response) => response.json<CustomerBody>())
    for (const other of others) expect(other).toEqual(first)
    expect(await countByTaxId(roles.acmeSeller, '11222333000262')).toBe(1)
  })

  it('of one tax id under different ids: one 201, the others 409 duplicate_customer', async () => {
    const ids = [randomUUID(), randomUUID(), randomUUID()]
    const responses = await Promise.all(ids.map((id) => save(id, { name: 'Race Ltda', tax_id: CNPJ })))
    expect(responses.map((response) => response.statusCode).sort()).toEqual([201, 409, 409])
    const winner = responses.find((response) => response.statusCode === 201)!.json<CustomerBody>()
    for (const loser of responses.filter((response) => response.statusCode === 409)) {
      expect(problemOf(loser, 409, 'duplicate_customer').customer_id).toBe(winner.id)
    }
    expect(await countByTaxId(roles.acmeSeller, '11222333000262')).toBe(1)
  })
})

function zetaValid() {
  return { name: 'Zeta Comércio', tax_id: CNPJ }
}
