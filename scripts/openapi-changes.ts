// `npm run openapi:check [-- <document.json>] [--changelog <file>]`: compares the OpenAPI document the service publishes
// now (or the file given, e.g. dist/openapi.json) with the last release's (docs/openapi/<version>.json,
// committed with each release), lists each change with the version it needs by docs/versioning.md,
// and the version the next release needs; fails when the document changed without an entry under
// CHANGELOG.md's [Unreleased], or when package.json's version is not the last release's.
import { readdir, readFile } from 'node:fs/promises'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'

/** What a change needs, by docs/versioning.md: major (breaks a correct client), minor (adds), patch (text only). */
export type Level = 'major' | 'minor' | 'patch'

export interface Change {
  level: Level
  /** `POST /api/auth/v1/token 200 body.access`, `servers`… */
  where: string
  what: string
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type JsonObject = { [key: string]: Json }
type Schema = JsonObject

const RANK: Record<Level, number> = { patch: 0, minor: 1, major: 2 }
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
/** Words for people: a change of them alone is a patch (documentation). */
const TEXT = new Set(['description', 'summary', 'title', 'examples', 'example', 'externalDocs', '$comment'])
/** Bounds that accept more when lowered (`min…`) or raised (`max…`). */
const LOWER_BOUNDS = ['minLength', 'minimum', 'exclusiveMinimum', 'minItems', 'minProperties']
const UPPER_BOUNDS = ['maxLength', 'maximum', 'exclusiveMaximum', 'maxItems', 'maxProperties']

const isObject = (value: Json | undefined): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value)
const same = (a: Json | undefined, b: Json | undefined): boolean => JSON.stringify(a) === JSON.stringify(b)
const asArray = (value: Json | undefined): Json[] => (value === undefined ? [] : Array.isArray(value) ? value : [value])

/**
 * Who reads a schema: the client writes a request (accepting more is compatible, less breaks),
 * the client reads a response (sending less variety is compatible, more breaks).
 */
type Direction = 'request' | 'response'

/** The document's paths by their spelling without a trailing slash: the service answers `/a/` as `/a` (src/app.ts). */
function bySlashlessPath(paths: Json | undefined): Map<string, { path: string; item: Json }> {
  const entries = isObject(paths) ? Object.entries(paths) : []
  return new Map(entries.map(([path, item]) => [path.length > 1 ? path.replace(/\/+$/, '') : path, { path, item }]))
}

class Comparison {
  readonly changes: Change[] = []
  constructor(
    private readonly before: JsonObject,
    private readonly after: JsonObject,
  ) {}

  add(level: Level, where: string, what: string): void {
    this.changes.push({ level, where, what })
  }

  /** A local `$ref` replaced by what it names; `allOf` folded into one schema (properties and required merged). */
  private resolve(document: JsonObject, schema: Json | undefined, depth = 0): Schema | undefined {
    if (!isObject(schema)) return undefined
    let resolved: Schema = schema
    if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#/') && depth < 32) {
      const target = schema.$ref
        .slice(2)
        .split('/')
        .reduce<Json | undefined>((node, key) => (isObject(node) ? node[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined), document)
      const { $ref: _ref, ...rest } = schema
      resolved = { ...(this.resolve(document, target, depth + 1) ?? {}), ...rest }
    }
    if (!Array.isArray(resolved.allOf)) return resolved
    const { allOf, ...rest } = resolved
    return allOf.reduce<Schema>((merged, part) => {
      const piece = this.resolve(document, part, depth + 1) ?? {}
      const properties = { ...(isObject(merged.properties) ? merged.properties : {}), ...(isObject(piece.properties) ? piece.properties : {}) }
      const required = [...new Set([...asArray(merged.required), ...asArray(piece.required)])]
      return { ...merged, ...piece, properties, required }
    }, rest)
  }

  /** Compares two schemas read in `direction`; `code` properties of problems grow in minor versions. */
  schema(where: string, rawBefore: Json | undefined, rawAfter: Json | undefined, direction: Direction, name = ''): void {
    const before = this.resolve(this.before, rawBefore)
    const after = this.resolve(this.after, rawAfter)
    if (!before || !after) {
      if (!same(rawBefore, rawAfter)) this.add('major', where, before ? 'schema removed' : 'schema added')
      return
    }
    const accepts = (more: boolean): Level => ((direction === 'request') === more ? 'minor' : 'major')
    const keys = new Set([...Object.keys(before), ...Object.keys(after)])
    for (const key of keys) {
      const [b, a] = [before[key], after[key]]
      if (same(b, a)) continue
      if (TEXT.has(key) || key.startsWith('x-')) {
        this.add('patch', where, `${key} changed`)
      } else if (key === 'properties') {
        this.properties(where, isObject(b) ? b : {}, isObject(a) ? a : {}, direction)
      } else if (key === 'required') {
        const [was, now] = [asArray(b), asArray(a)]
        for (const field of now.filter((item) => !was.includes(item))) this.add(accepts(false), `${where}.${String(field)}`, 'now required')
        for (const field of was.filter((item) => !now.includes(item))) this.add(accepts(true), `${where}.${String(field)}`, 'no longer required')
      } else if (key === 'type' || key === 'enum') {
        const [was, now] = [asArray(b), asArray(a)]
        const added = now.filter((item) => !was.some((old) => same(old, item)))
        const removed = was.filter((item) => !now.some((value) => same(value, item)))
        const what = (verb: string, items: Json[]) => `${key} ${verb} ${items.map((item) => JSON.stringify(item)).join(', ')}`
        const unrestricted = b === undefined || a === undefined
        if (unrestricted) {
          this.add(accepts(a === undefined), where, `${key} ${a === undefined ? 'removed' : 'added'}`)
          continue
        }
        // A problem's `code` may grow in a minor version: clients treat an unknown code like its status.
        const codes = key === 'enum' && name === 'code'
        if (added.length > 0) this.add(codes ? 'minor' : accepts(true), where, what('adds', added))
        if (removed.length > 0) this.add(accepts(false), where, what('drops', removed))
      } else if (LOWER_BOUNDS.includes(key) || UPPER_BOUNDS.includes(key)) {
        const lower = LOWER_BOUNDS.includes(key)
        const looser = b === undefined || (a !== undefined && (lower ? Number(a) < Number(b) : Number(a) > Number(b)))
        this.add(accepts(looser), where, `${key} ${JSON.stringify(b)} → ${JSON.stringify(a)}`)
      } else if (key === 'items') {
        this.schema(`${where}[]`, b, a, direction)
      } else if (key === 'additionalProperties') {
        const open = (value: Json | undefined) => value !== false
        if (open(b) !== open(a)) this.add(accepts(open(a)), where, `additionalProperties ${JSON.stringify(b)} → ${JSON.stringify(a)}`)
        else if (isObject(b) || isObject(a)) this.schema(`${where}{}`, isObject(b) ? b : {}, isObject(a) ? a : {}, direction)
      } else if (key === 'anyOf' || key === 'oneOf') {
        const [was, now] = [asArray(b), asArray(a)]
        for (let index = 0; index < Math.max(was.length, now.length); index++) {
          if (index >= was.length) this.add(accepts(true), where, `${key} adds an alternative`)
          else if (index >= now.length) this.add(accepts(false), where, `${key} drops an alternative`)
          else this.schema(`${where}(${key} ${index})`, was[index], now[index], direction)
        }
      } else if (key === 'deprecated') {
        this.add('minor', where, a === true ? 'deprecated' : 'no longer deprecated')
      } else if (key === 'pattern' || key === 'format' || key === 'const') {
        this.add(accepts(a === undefined), where, `${key} ${JSON.stringify(b)} → ${JSON.stringify(a)}`)
      } else {
        this.add('major', where, `${key} ${JSON.stringify(b)} → ${JSON.stringify(a)}`)
      }
    }
  }

  private properties(where: string, before: JsonObject, after: JsonObject, direction: Direction): void {
    for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
      const path = `${where}.${name}`
      if (!(name in after)) this.add('major', path, 'property removed')
      else if (!(name in before)) {
        // A new request property a client must send breaks it (reported by `required`); any other addition is minor.
        this.add('minor', path, 'property added')
      } else this.schema(path, before[name], after[name], direction, name)
    }
  }

  private parameters(where: string, before: Json | undefined, after: Json | undefined): void {
    const byKey = (list: Json | undefined) =>
      new Map(
        asArray(list)
          .filter(isObject)
          .map((parameter) => [`${String(parameter.in)} ${String(parameter.name).toLowerCase()}`, parameter]),
      )
    const [was, now] = [byKey(before), byKey(after)]
    for (const [key, parameter] of now) {
      const old = was.get(key)
      const path = `${where} ${key} parameter`
      if (!old) {
        this.add(
          parameter.required === true ? 'major' : 'minor',
          path,
          parameter.required === true ? 'required parameter added' : 'optional parameter added',
        )
        continue
      }
      if (old.required !== true && parameter.required === true) this.add('major', path, 'now required')
      if (old.required === true && parameter.required !== true) this.add('minor', path, 'no longer required')
      for (const text of ['description', 'example', 'examples']) if (!same(old[text], parameter[text])) this.add('patch', path, `${text} changed`)
      if (!same(old.deprecated, parameter.deprecated)) this.add('minor', path, parameter.deprecated === true ? 'deprecated' : 'no longer deprecated')
      this.schema(path, old.schema, parameter.schema, 'request')
    }
    for (const key of was.keys()) if (!now.has(key)) this.add('major', `${where} ${key} parameter`, 'parameter removed')
  }

  private content(where: string, before: Json | undefined, after: Json | undefined, direction: Direction): void {
    const [was, now] = [isObject(before) ? before : {}, isObject(after) ? after : {}]
    for (const type of new Set([...Object.keys(was), ...Object.keys(now)])) {
      const [old, current] = [was[type], now[type]]
      if (!isObject(current)) this.add(direction === 'request' ? 'major' : 'minor', `${where} ${type}`, 'media type removed')
      else if (!isObject(old)) this.add(direction === 'request' ? 'minor' : 'major', `${where} ${type}`, 'media type added')
      else {
        if (!same(old.examples, current.examples) || !same(old.example, current.example)) this.add('patch', `${where} ${type}`, 'examples changed')
        this.schema(`${where} body`, old.schema, current.schema, direction)
      }
    }
  }

  private responses(where: string, before: Json | undefined, after: Json | undefined): void {
    const [was, now] = [isObject(before) ? before : {}, isObject(after) ? after : {}]
    for (const status of new Set([...Object.keys(was), ...Object.keys(now)])) {
      const path = `${where} ${status}`
      const [old, current] = [this.resolve(this.before, was[status]), this.resolve(this.after, now[status])]
      if (!current) {
        this.add('minor', path, 'status no longer answered')
        continue
      }
      if (!old) {
        // A new error status on a route is minor (docs/versioning.md: clients handle any status of a
        // class they know); a new success or redirection changes what a correct client must do with it.
        this.add(/^[45]/.test(status) ? 'minor' : 'major', path, 'status added')
        continue
      }
      if (!same(old.description, current.description)) this.add('patch', path, 'description changed')
      const [headersBefore, headersAfter] = [isObject(old.headers) ? old.headers : {}, isObject(current.headers) ? current.headers : {}]
      for (const name of new Set([...Object.keys(headersBefore), ...Object.keys(headersAfter)])) {
        const [h0, h1] = [this.resolve(this.before, headersBefore[name]), this.resolve(this.after, headersAfter[name])]
        if (!h1) this.add(h0?.required === true ? 'major' : 'minor', `${path} ${name} header`, 'header removed')
        else if (!h0) this.add('minor', `${path} ${name} header`, 'header added')
        else {
          if (h0.required === true && h1.required !== true) this.add('major', `${path} ${name} header`, 'no longer always sent')
          if (h0.required !== true && h1.required === true) this.add('minor', `${path} ${name} header`, 'now always sent')
          if (!same(h0.description, h1.description)) this.add('patch', `${path} ${name} header`, 'description changed')
          this.schema(`${path} ${name} header`, h0.schema, h1.schema, 'response')
        }
      }
      this.content(path, old.content, current.content, 'response')
    }
  }

  private operation(where: string, before: JsonObject, after: JsonObject): void {
    for (const key of ['summary', 'description', 'tags', 'operationId', 'externalDocs']) {
      if (!same(before[key], after[key])) this.add('patch', where, `${key} changed`)
    }
    if (!same(before.deprecated, after.deprecated)) this.add('minor', where, after.deprecated === true ? 'deprecated' : 'no longer deprecated')
    if (!same(before.security, after.security)) {
      const open = (security: Json | undefined) =>
        Array.isArray(security) && (security.length === 0 || security.some((item) => isObject(item) && Object.keys(item).length === 0))
      this.add(open(after.security) && !open(before.security) ? 'minor' : 'major', where, 'security changed')
    }
    this.parameters(where, before.parameters, after.parameters)
    const [bodyBefore, bodyAfter] = [this.resolve(this.before, before.requestBody), this.resolve(this.after, after.requestBody)]
    if (bodyBefore || bodyAfter) {
      if (!bodyAfter) this.add('major', `${where} request body`, 'removed')
      else if (!bodyBefore) this.add(bodyAfter.required === true ? 'major' : 'minor', `${where} request body`, 'added')
      else {
        if (bodyBefore.required !== true && bodyAfter.required === true) this.add('major', `${where} request body`, 'now required')
        if (!same(bodyBefore.description, bodyAfter.description)) this.add('patch', `${where} request body`, 'description changed')
        this.content(`${where} request`, bodyBefore.content, bodyAfter.content, 'request')
      }
    }
    this.responses(where, before.responses, after.responses)
  }

  compare(): Change[] {
    const [pathsBefore, pathsAfter] = [bySlashlessPath(this.before.paths), bySlashlessPath(this.after.paths)]
    for (const key of new Set([...pathsBefore.keys(), ...pathsAfter.keys()])) {
      const [spelledBefore, spelledAfter] = [pathsBefore.get(key), pathsAfter.get(key)]
      const [b, a] = [spelledBefore?.item, spelledAfter?.item]
      const path = spelledAfter?.path ?? spelledBefore?.path ?? key
      if (spelledBefore && spelledAfter && spelledBefore.path !== spelledAfter.path) {
        this.add('minor', path, `spelled ${spelledBefore.path} before: the service answers both (ignoreTrailingSlash)`)
      }
      for (const method of METHODS) {
        const [opBefore, opAfter] = [isObject(b) ? b[method] : undefined, isObject(a) ? a[method] : undefined]
        const where = `${method.toUpperCase()} ${path}`
        if (isObject(opBefore) && isObject(opAfter)) this.operation(where, opBefore, opAfter)
        else if (isObject(opBefore)) this.add('major', where, 'operation removed')
        else if (isObject(opAfter)) this.add('minor', where, 'operation added')
      }
    }
    // Outside the operations: the info (its version aside) and tags are text; servers move clients.
    const { version: _before, ...infoBefore } = isObject(this.before.info) ? this.before.info : {}
    const { version: _after, ...infoAfter } = isObject(this.after.info) ? this.after.info : {}
    if (!same(infoBefore, infoAfter)) this.add('patch', 'info', 'changed')
    if (!same(this.before.tags, this.after.tags)) this.add('patch', 'tags', 'changed')
    if (!same(this.before.servers, this.after.servers)) this.add('minor', 'servers', 'changed')
    const schemes = (document: JsonObject) => (isObject(document.components) ? document.components.securitySchemes : undefined)
    const [schemesBefore, schemesAfter] = [schemes(this.before), schemes(this.after)]
    if (!same(schemesBefore, schemesAfter)) {
      const strip = (value: Json | undefined) => JSON.stringify(value, (key, item: Json) => (key === 'description' ? undefined : item))
      this.add(strip(schemesBefore) === strip(schemesAfter) ? 'patch' : 'major', 'components.securitySchemes', 'changed')
    }
    return this.changes
  }
}

/** Every difference between two OpenAPI documents that a partner could notice, with the version it needs. */
export function compareDocuments(before: Record<string, unknown>, after: Record<string, unknown>): Change[] {
  return new Comparison(before as JsonObject, after as JsonObject).compare()
}

/** The highest level among `changes`, or undefined when there is none. */
export function levelOf(changes: readonly Change[]): Level | undefined {
  return changes.reduce<Level | undefined>((highest, change) => (!highest || RANK[change.level] > RANK[highest] ? change.level : highest), undefined)
}

const parseVersion = (version: string): [number, number, number] => {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(version)
  if (!match) throw new Error(`not a release version: ${version}`)
  return [Number(match[1]), Number(match[2]), Number(match[3])]
}

/** The least version after `released` that `level` allows. */
export function nextVersion(released: string, level: Level): string {
  const [major, minor, patch] = parseVersion(released)
  if (level === 'major') return `${major + 1}.0.0`
  if (level === 'minor') return `${major}.${minor + 1}.0`
  return `${major}.${minor}.${patch + 1}`
}

const compareVersions = (a: string, b: string): number => {
  const [x, y] = [parseVersion(a), parseVersion(b)]
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]
}

/** CHANGELOG.md's releases, newest first, and the entries (`- ` lines) under [Unreleased], and its `### ` headings. */
export function readChangelog(text: string): { releases: string[]; unreleased: string[]; unreleasedHeadings: string[] } {
  const releases = [...text.matchAll(/^## \[(\d+\.\d+\.\d+)\]/gm)].map((match) => match[1] ?? '')
  const section = /^## \[Unreleased\]\s*$([\s\S]*?)(?=^## \[|(?![\s\S]))/m.exec(text)?.[1] ?? ''
  const lines = section.split('\n')
  return {
    releases,
    unreleased: lines.filter((line) => line.startsWith('- ')),
    unreleasedHeadings: lines.flatMap((line) => /^### (.+)$/.exec(line)?.slice(1) ?? []),
  }
}

export interface ReleaseState {
  /** The last release's version, and its document. */
  released: string
  releasedDocument: Record<string, unknown>
  /** package.json's version, and the document the service publishes now. */
  version: string
  document: Record<string, unknown>
  changelog: string
}

/**
 * The changes since the last release, the version the next release needs (undefined: none), and
 * what is wrong with the way they are recorded (nothing: []). package.json says the last release
 * until the next one's commit (docs/versioning.md, "Releases").
 */
export function checkRelease(state: ReleaseState): { changes: Change[]; next: string | undefined; problems: string[] } {
  const changes = compareDocuments(state.releasedDocument, state.document)
  const { releases, unreleased, unreleasedHeadings } = readChangelog(state.changelog)
  const problems: string[] = []
  if (releases[0] !== state.released) {
    problems.push(`CHANGELOG.md's last release is ${releases[0] ?? 'none'}, but docs/openapi/ holds the document of ${state.released}`)
  }
  if (state.version !== state.released) {
    problems.push(
      `package.json's version ${state.version} is not the last release, ${state.released}: it changes in a release's commit only (docs/versioning.md)`,
    )
  }
  const level = levelOf(changes)
  if (!level) return { changes, next: undefined, problems }
  if (unreleased.length === 0) {
    problems.push(
      `the OpenAPI document changed since ${state.released} (${changes.length} changes, ${level}) but CHANGELOG.md has no entry ` +
        'under [Unreleased]: say there what a partner sees change (docs/versioning.md)',
    )
  }
  if (level === 'major' && !unreleasedHeadings.includes('Removed')) {
    problems.push(
      `a breaking change since ${state.released} (the next release: ${nextVersion(state.released, 'major')}) needs its entry under ` +
        '### Removed in [Unreleased], after its deprecation, and for the routes it breaks a new path version beside the old (docs/versioning.md)',
    )
  }
  return { changes, next: nextVersion(state.released, level), problems }
}

const RELEASES = new URL('../docs/openapi/', import.meta.url)

/** The last release's document: the newest of docs/openapi/<version>.json. */
export async function releasedDocument(): Promise<{ version: string; document: Record<string, unknown> }> {
  const versions = (await readdir(RELEASES)).flatMap((name) => /^(\d+\.\d+\.\d+)\.json$/.exec(name)?.slice(1) ?? [])
  const version = versions.sort(compareVersions).at(-1)
  if (!version) throw new Error('docs/openapi/ holds no release document')
  return { version, document: JSON.parse(await readFile(new URL(`${version}.json`, RELEASES), 'utf8')) as Record<string, unknown> }
}

async function main(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { changelog: { type: 'string' } } })
  const { publishedDocument } = await import('./openapi.js')
  const file = positionals[0]
  const document = file ? (JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>) : await publishedDocument()
  const released = await releasedDocument()
  const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  const changelog = await readFile(values.changelog ?? new URL('../CHANGELOG.md', import.meta.url), 'utf8')
  const { changes, next, problems } = checkRelease({ released: released.version, releasedDocument: released.document, version, document, changelog })
  const out = (line: string) => process.stdout.write(`${line}\n`)
  const summary = changes.length === 0 ? 'unchanged' : `${changes.length} changes, ${levelOf(changes)}: the next release is ${next}`
  out(`OpenAPI document against release ${released.version}: ${summary}`)
  for (const change of changes.filter((item) => item.level !== 'patch')) out(`  ${change.level}  ${change.where}: ${change.what}`)
  const texts = changes.filter((item) => item.level === 'patch')
  // Text changes are many and say little each: counted, the first few shown.
  for (const change of texts.slice(0, 5)) out(`  patch  ${change.where}: ${change.what}`)
  if (texts.length > 5) out(`  patch  … and ${texts.length - 5} more changes of descriptions or examples`)
  for (const problem of problems) process.stderr.write(`openapi:check: ${problem}\n`)
  if (problems.length > 0) process.exitCode = 1
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main(process.argv.slice(2))
