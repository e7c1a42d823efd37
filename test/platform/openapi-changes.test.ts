import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { checkRelease, compareDocuments, levelOf, readChangelog, releasedDocument, type Change } from '../../scripts/openapi-changes.js'
import { publishedDocument } from '../../scripts/openapi.js'

/**
 * `npm run openapi:check` (issue 34, item 9): the document's changes since the last release, each
 * classified by docs/versioning.md, need an [Unreleased] entry and the version they call for.
 */

type Document = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

const read = (file: string) => readFile(new URL(`../../${file}`, import.meta.url), 'utf8')
const copy = (document: Document): Document => structuredClone(document)
const WITH_ENTRY = '## [Unreleased]\n\n### Added\n\n- Something.\n\n## [1.1.0] - 2026-11-27\n'
const WITHOUT_ENTRY = '## [Unreleased]\n\n## [1.1.0] - 2026-11-27\n'

let released: { version: string; document: Document }
beforeAll(async () => {
  released = await releasedDocument()
})

const changesAfter = (edit: (document: Document) => void): Change[] => {
  const after = copy(released.document)
  edit(after)
  return compareDocuments(released.document, after)
}
const check = (edit: (document: Document) => void, version: string, changelog: string) => {
  const document = copy(released.document)
  edit(document)
  return checkRelease({ released: released.version, releasedDocument: released.document, version, document, changelog }).problems
}

const token = (document: Document) => document.paths['/api/auth/v1/token'].post
const addRoute = (document: Document) => {
  document.paths['/api/company/v1/get-user-companies-too'] = copy(document.paths['/api/company/v1/get-user-companies'])
}

describe('the document against the last release', () => {
  it("the service's document, CHANGELOG.md and package.json agree with the last release (what CI checks)", async () => {
    const { version } = JSON.parse(await read('package.json')) as { version: string }
    const { changes, problems } = checkRelease({
      released: released.version,
      releasedDocument: released.document,
      version,
      document: await publishedDocument(),
      changelog: await read('CHANGELOG.md'),
    })
    // On failure: an entry under [Unreleased] and the version `npm run openapi:check` names.
    expect(problems, changes.map((change) => `${change.level} ${change.where}: ${change.what}`).join('\n')).toEqual([])
    expect(readChangelog(await read('CHANGELOG.md')).releases[0]).toBe(released.version)
  })

  it("1.1.0's changes from 1.0.0 (new error statuses, code enums, Idempotency-Key) are minor by the policy", async () => {
    const before = JSON.parse(await read('docs/openapi/1.0.0.json')) as Document
    const after = JSON.parse(await read('docs/openapi/1.1.0.json')) as Document
    const changes = compareDocuments(before, after)
    expect(levelOf(changes)).toBe('minor')
    expect(changes).toContainEqual({ level: 'minor', where: 'POST /api/auth/v1/token 408', what: 'status added' })
    expect(changes).toContainEqual({ level: 'minor', where: 'POST /webhook/esign/{secret} 429', what: 'status added' })
    expect(changes).toContainEqual({ level: 'minor', where: 'POST /api/company/v1/{company_role_id}/customers/{id} 422', what: 'status added' })
    expect(changes).toContainEqual({
      level: 'minor',
      where: 'POST /api/company/v1/{company_role_id}/customers/{id} header idempotency-key parameter',
      what: 'optional parameter added',
    })
  })
})

describe('the classification (docs/versioning.md)', () => {
  it('a new route, error status, optional parameter or problem code is minor', () => {
    expect(changesAfter(addRoute)).toEqual([{ level: 'minor', where: 'GET /api/company/v1/get-user-companies-too', what: 'operation added' }])
    expect(levelOf(changesAfter((document) => (token(document).responses['409'] = token(document).responses['401'])))).toBe('minor')
    const codes = (document: Document) => token(document).responses['401'].content['application/problem+json'].schema.allOf[1].properties.code.enum
    expect(changesAfter((document) => codes(document).push('a_new_code'))).toEqual([
      { level: 'minor', where: 'POST /api/auth/v1/token 401 body.code', what: 'enum adds "a_new_code"' },
    ])
    expect(
      levelOf(
        changesAfter((document) => (token(document).parameters = [{ in: 'query', name: 'hint', required: false, schema: { type: 'string' } }])),
      ),
    ).toBe('minor')
  })

  it('a path spelled with or without its trailing slash is the same operation (the service answers both): minor, not removed and added', () => {
    const moved = changesAfter((document) => {
      document.paths['/api/auth/v1/token/'] = document.paths['/api/auth/v1/token']
      delete document.paths['/api/auth/v1/token']
    })
    expect(moved).toEqual([
      { level: 'minor', where: '/api/auth/v1/token/', what: 'spelled /api/auth/v1/token before: the service answers both (ignoreTrailingSlash)' },
    ])
  })

  it('a removed route or response property, a new required request property, a new success status are major', () => {
    expect(levelOf(changesAfter((document) => delete document.paths['/api/auth/v1/login']))).toBe('major')
    const success = (document: Document) => token(document).responses['200'].content['application/json'].schema
    expect(changesAfter((document) => delete success(document).properties.access)).toContainEqual({
      level: 'major',
      where: 'POST /api/auth/v1/token 200 body.access',
      what: 'property removed',
    })
    const body = (document: Document) => token(document).requestBody.content['application/json'].schema
    expect(
      changesAfter((document) => {
        body(document).properties.otp = { type: 'string' }
        body(document).required.push('otp')
      }),
    ).toEqual(
      expect.arrayContaining([
        { level: 'minor', where: 'POST /api/auth/v1/token request body.otp', what: 'property added' },
        { level: 'major', where: 'POST /api/auth/v1/token request body.otp', what: 'now required' },
      ]),
    )
    expect(changesAfter((document) => (token(document).responses['202'] = token(document).responses['200']))).toEqual([
      { level: 'major', where: 'POST /api/auth/v1/token 202', what: 'status added' },
    ])
    expect(levelOf(changesAfter((document) => (body(document).properties.password.maxLength = 64)))).toBe('major')
    expect(levelOf(changesAfter((document) => (body(document).properties.password.maxLength = 4096)))).toBe('minor')
  })

  it('a new value of an enum a client reads, other than a problem code, is major', () => {
    const companies = (document: Document) =>
      document.paths['/api/company/v1/get-user-companies'].get.responses['200'].content['application/json'].schema.items.properties.roles.items
        .properties.role
    expect(levelOf(changesAfter((document) => companies(document).enum.push('broker')))).toBe('major')
  })

  it('descriptions and examples alone are a patch', () => {
    expect(levelOf(changesAfter((document) => (token(document).description += ' More words.')))).toBe('patch')
  })
})

describe('the check', () => {
  it('fails when the document changed and [Unreleased] has no entry', () => {
    expect(check(addRoute, '1.1.0', WITHOUT_ENTRY)).toEqual([
      'the OpenAPI document changed since 1.1.0 (1 changes, minor) but CHANGELOG.md has no entry under [Unreleased]: say there what a partner sees change (docs/versioning.md)',
    ])
    expect(check(() => undefined, '1.1.0', WITHOUT_ENTRY)).toEqual([])
  })

  it("fails when package.json's version is not the last release's (it changes in a release's commit), and names the next release's", () => {
    expect(check(addRoute, '1.2.0', WITH_ENTRY)).toEqual([
      "package.json's version 1.2.0 is not the last release, 1.1.0: it changes in a release's commit only (docs/versioning.md)",
    ])
    expect(check(addRoute, '1.1.0', WITH_ENTRY)).toEqual([])
    const document = copy(released.document)
    addRoute(document)
    const state = { released: '1.1.0', releasedDocument: released.document, version: '1.1.0', document, changelog: WITH_ENTRY }
    expect(checkRelease(state).next).toBe('1.2.0')
    // Text alone needs an entry, and a patch release.
    expect(check((document) => (token(document).summary = 'Log in'), '1.1.0', WITH_ENTRY)).toEqual([])
  })

  it('fails on a breaking change unless [Unreleased] lists it under Removed', () => {
    const removeLogin = (document: Document) => delete document.paths['/api/auth/v1/login']
    expect(check(removeLogin, '1.1.0', WITH_ENTRY)).toEqual([
      'a breaking change since 1.1.0 (the next release: 2.0.0) needs its entry under ### Removed in [Unreleased], after its deprecation, and for the routes it breaks a new path version beside the old (docs/versioning.md)',
    ])
    expect(check(removeLogin, '1.1.0', WITH_ENTRY.replace('### Added', '### Removed'))).toEqual([])
  })

  it('npm run openapi:check fails on a document changed without an entry, naming the change', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'openapi-check-'))
    try {
      const changed = copy(await publishedDocument())
      delete changed.paths['/api/auth/v1/login']
      await writeFile(path.join(dir, 'openapi.json'), JSON.stringify(changed))
      await writeFile(path.join(dir, 'CHANGELOG.md'), `# Changelog\n\n${WITHOUT_ENTRY.replace('1.1.0', released.version)}`)
      const args = ['--import', 'tsx', 'scripts/openapi-changes.ts', path.join(dir, 'openapi.json'), '--changelog', path.join(dir, 'CHANGELOG.md')]
      const run = await promisify(execFile)(process.execPath, args).then(
        () => ({ code: 0, stdout: '', stderr: '' }),
        (error: { code: number; stdout: string; stderr: string }) => error,
      )
      expect(run.code).toBe(1)
      expect(run.stdout).toContain('major  POST /api/auth/v1/login: operation removed')
      expect(run.stderr).toMatch(
        /^openapi:check: the OpenAPI document changed since \S+ \(\d+ changes, major\) but CHANGELOG.md has no entry under \[Unreleased\]/m,
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
