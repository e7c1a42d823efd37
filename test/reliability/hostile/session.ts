import { createHmac } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { DEMO_PASSWORD, obtainTokens, type Tokens } from '../../helpers/app.js'
import { forgeHs256 } from '../../helpers/jwt.js'
import { linkFor } from '../../registration/links.js'

export const USERS = {
  alice: 'alice@acme.example',
  bob: 'bob@beta.example',
  carol: 'carol@gamma.example',
  dave: 'dave@delta.example',
  erin: 'erin@acme.example',
} as const
export type UserKey = keyof typeof USERS
export const USER_KEYS = Object.keys(USERS) as UserKey[]

/** Distinctive values, so that finding them in a log line means a leak and nothing else. */
export const WEBHOOK_SECRET = 'Fuzz-Webhook-Secret-93c1e7a4b2'
export const OLD_WEBHOOK_SECRET = 'Fuzz-Old-Webhook-Secret-5d20f8'
export const WEBHOOK_HMAC_KEY = 'Fuzz-Hmac-Key-4be9a0c371'
/** Generated passwords carry this prefix, so that the log check can recognise them. */
export const PASSWORD_MARK = 'pw~'

const PLACEHOLDER = /@@([a-z.]+)(?:~([a-z]+)(?::(\d+))?)?@@/g

/** Everything secret that the run sent or was given; the log check searches for each. */
export class SecretRegistry {
  readonly values = new Set<string>([DEMO_PASSWORD, WEBHOOK_SECRET, OLD_WEBHOOK_SECRET, WEBHOOK_HMAC_KEY])

  add(value: string | undefined, minLength = 8): void {
    if (value !== undefined && value.trim().length >= minLength) this.values.add(value)
  }

  /** Tokens found in a success body (a login, a refresh, a confirmation). */
  addIssued(body: string): void {
    for (const match of body.matchAll(/eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g)) this.add(match[0])
  }

  /** Passwords of a JSON body we sent: the demo one, and generated ones (marked). */
  addPasswords(payload: string): void {
    for (const match of payload.matchAll(/pw~[^"\\]{5,}/g)) this.add(match[0])
  }
}

function claimsOf(payload: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>
  } catch {
    return undefined
  }
}

/**
 * A spelling of the token the service must refuse. A mutation that leaves the token as it was (the
 * confirmation link's token is already lower case) becomes a flipped character instead.
 */
function mutateToken(token: string, mutation: string, n: number): string {
  const mutated = applyMutation(token, mutation, n)
  return mutated === token ? applyMutation(token, 'flip', n) : mutated
}

function applyMutation(token: string, mutation: string, n: number): string {
  const [header = '', payload = '', signature = ''] = token.split('.')
  const claims = claimsOf(payload)
  // The confirmation link's token is no JWT: the JWT-specific mutations become a flipped character.
  if (!claims && ['none', 'resign', 'payload'].includes(mutation)) return applyMutation(token, 'flip', n)
  switch (mutation) {
    case 'cut':
      return token.slice(0, 1 + (n % (token.length - 1)))
    case 'flip': {
      const index = n % token.length
      const replacement = token[index] === 'A' ? 'B' : 'A'
      return `${token.slice(0, index)}${replacement}${token.slice(index + 1)}`
    }
    case 'nosig':
      return `${header}.${payload}.`
    case 'none':
      return `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`
    case 'resign':
      return forgeHs256(claims ?? {}, 'another-key-another-key-another-key!')
    case 'payload': {
      const tampered = { ...claims, user_id: '10000000-0000-4000-8000-000000000002', exp: Number(claims?.exp) + 86_400 }
      return `${header}.${Buffer.from(JSON.stringify(tampered)).toString('base64url')}.${signature}`
    }
    case 'double':
      return `${token}.${token}`
    case 'lower':
      return token.toLowerCase()
    default:
      throw new Error(`unknown token mutation ${mutation}`)
  }
}

export interface Resolved {
  url: string
  headers: Record<string, string>
  payload: string | Buffer | undefined
  /** The request presents a refresh token that was already spent: its family is revoked (§2). */
  replaysSpentRefresh: boolean
  /** The request presents the current refresh token of the rotation family. */
  presentsCurrentRefresh: boolean
}

/**
 * Tokens and links of one test: one session per demo user for the bearer routes, and a separate
 * family for route 3, so that a replayed refresh token (which revokes its family) never cuts off
 * the bearer tokens the rest of the run relies on.
 */
export class FuzzSession {
  readonly secrets = new SecretRegistry()
  private sessions = {} as Record<UserKey, Tokens>
  private rotation = { current: '', spent: [] as string[], revoked: false }
  private link = { uid: '', token: '' }

  constructor(private readonly app: FastifyInstance) {}

  async start(): Promise<void> {
    for (const user of USER_KEYS) this.sessions[user] = await this.login(USERS[user])
    await this.renewRotation()
    const [uid = '', token = ''] = (await linkFor('maria@legacy.example')).split('/').slice(-2)
    this.link = { uid, token }
    this.secrets.add(token)
  }

  private async login(email: string): Promise<Tokens> {
    const tokens = await obtainTokens(this.app, email, DEMO_PASSWORD)
    this.secrets.add(tokens.access)
    this.secrets.add(tokens.refresh)
    return tokens
  }

  /** After a replay revoked the rotation family, a new login gives route 3 something to rotate again. */
  get needsNewRotation(): boolean {
    return this.rotation.revoked
  }

  async renewRotation(): Promise<void> {
    this.rotation = { current: (await this.login(USERS.carol)).refresh, spent: [], revoked: false }
  }

  /** What the service answered to a request: follow the rotation, remember issued tokens. */
  learn(resolved: Resolved, status: number, body: string): void {
    if (status >= 200 && status < 300) this.secrets.addIssued(body)
    if (resolved.presentsCurrentRefresh && status === 200) {
      this.rotation.spent.push(this.rotation.current)
      this.rotation.current = (JSON.parse(body) as Tokens).refresh
    }
    if (resolved.replaysSpentRefresh && status === 401) this.rotation.revoked = true
  }

  private value(name: string): string {
    const [kind, which = ''] = name.split('.')
    if (kind === 'access' || kind === 'refresh') {
      const tokens = this.sessions[which as UserKey]
      if (!tokens) throw new Error(`no session for ${which}`)
      return tokens[kind]
    }
    if (name === 'rotation.current') return this.rotation.current
    if (name === 'rotation.spent') return this.rotation.spent.at(-1) ?? this.rotation.current
    if (name === 'secret') return WEBHOOK_SECRET
    if (name === 'secret.old') return OLD_WEBHOOK_SECRET
    if (name === 'link.uid') return this.link.uid
    if (name === 'link.token') return this.link.token
    throw new Error(`unknown placeholder ${name}`)
  }

  private substitute(text: string): string {
    return text.replace(PLACEHOLDER, (_match, name: string, mutation?: string, n?: string) => {
      if (name === 'hmac' || name === 'hmac.wrong') return _match
      const value = this.value(name)
      return mutation ? mutateToken(value, mutation, Number(n ?? 0)) : value
    })
  }

  /** Fills in the placeholders of a generated request, and records every secret it carries. */
  resolve(request: { url: string; headers: Record<string, string>; payload?: string | Buffer | undefined }): Resolved {
    const spent = this.rotation.spent.length > 0
    const mentions = (name: string) =>
      request.url.includes(name) ||
      Object.values(request.headers).some((value) => value.includes(name)) ||
      (typeof request.payload === 'string' && request.payload.includes(name))
    const url = this.substitute(request.url)
    const payload = typeof request.payload === 'string' ? this.substitute(request.payload) : request.payload
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(request.headers)) {
      headers[name] = value === '@@hmac@@' || value === '@@hmac.wrong@@' ? this.hmac(payload, value === '@@hmac.wrong@@') : this.substitute(value)
    }
    this.record(url, headers, payload)
    return {
      url,
      headers,
      payload,
      replaysSpentRefresh: spent && mentions('@@rotation.spent@@'),
      // Before anything was spent, "the spent token" is the current one.
      presentsCurrentRefresh: mentions('@@rotation.current@@') || (!spent && mentions('@@rotation.spent@@')),
    }
  }

  private hmac(payload: string | Buffer | undefined, wrong: boolean): string {
    const digest = createHmac('sha256', WEBHOOK_HMAC_KEY)
      .update(payload ?? '')
      .update(wrong ? ' ' : '')
      .digest('hex')
    return `sha256=${digest}`
  }

  private record(url: string, headers: Record<string, string>, payload: string | Buffer | undefined): void {
    this.secrets.add(headers.authorization, 16)
    for (const match of `${url} ${Object.values(headers).join(' ')} ${typeof payload === 'string' ? payload : ''}`.matchAll(
      /eyJ[A-Za-z0-9_.-]{20,}/g,
    )) {
      this.secrets.add(match[0])
    }
    if (typeof payload === 'string') this.secrets.addPasswords(payload)
    this.secrets.addPasswords(decodeURIComponentSafe(url))
  }
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
