import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { AMBIENT_VARIABLES, EnvironmentSchema, OTHER_VARIABLES, RETIRED_VARIABLES } from '../../schemas/config.js'
import { REQUIRED_NODE_MAJOR } from '../../src/lib/node-version.js'

const read = (file: string) => readFile(new URL(`../../${file}`, import.meta.url), 'utf8')

/** Every variable an operator may set: the service's schema and the others' registry (schemas/config.ts). */
const DOCUMENTED = [...Object.keys(EnvironmentSchema.properties), ...Object.keys(OTHER_VARIABLES)]

/** The TypeScript files of the shipped code, as [path, text]. */
async function shippedSources(): Promise<[string, string][]> {
  const files: [string, string][] = []
  for (const folder of ['src', 'schemas', 'db']) {
    for (const entry of await readdir(new URL(`../../${folder}`, import.meta.url), { recursive: true })) {
      if (entry.endsWith('.ts')) files.push([path.join(folder, entry), await read(path.join(folder, entry))])
    }
  }
  return files
}

/**
 * The environment variables a source file reads: `process.env.X`, `env.X`, `env['X']`; where it
 * indexes the environment with a computed name (`env[name]`), every UPPER_SNAKE string literal of
 * the file; and every OTEL_* name it mentions (the OpenTelemetry SDK reads those itself).
 */
function variablesRead(source: string): string[] {
  const names = [
    ...source.matchAll(/\b(?:process\.env|(?<![.\w])env|rawEnv)\.([A-Za-z_][A-Za-z0-9_]*)/g),
    ...source.matchAll(/\b(?:process\.env|(?<![.\w])env|rawEnv)\[\s*['"`]([^'"`]+)['"`]\s*\]/g),
    ...[...source.matchAll(/\b(OTEL_[A-Z0-9_]*[A-Z0-9])/g)],
  ].map((match) => match[1] ?? '')
  if (/\b(?:process\.env|(?<![.\w])env|rawEnv)\[\s*[^'"`\s]/.test(source)) {
    names.push(...[...source.matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g)].map((match) => match[1] ?? ''))
  }
  return [...new Set(names)]
}

describe('the files a newcomer looks for', () => {
  it('.env.example names every variable the service and its commands read, each commented out', async () => {
    const example = await read('.env.example')
    const named = new Set([...example.matchAll(/^# ([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1]))
    // On failure: add the variable to .env.example (a service setting also to docs/configuration.md).
    expect(DOCUMENTED.filter((name) => !named.has(name))).toEqual([])
    expect(example).not.toMatch(/^[A-Z]/m)
  })

  it("SECURITY.md says how to report a vulnerability and supports CHANGELOG.md's latest release", async () => {
    const policy = await read('SECURITY.md')
    expect(policy).toMatch(/^## Reporting a vulnerability$/m)
    const latest = /^## \[(\d+)\.(\d+)\.\d+\]/m.exec(await read('CHANGELOG.md'))
    expect(policy).toMatch(/^## Supported versions$/m)
    expect(policy).toContain(`(${latest?.[1]}.${latest?.[2]}.x) | yes |`)
  })

  it('docs/operations.md has one retention heading, and the ApiInstanceDown runbook shows the exit status and the kernel log', async () => {
    const headings = [...(await read('docs/operations.md')).matchAll(/^#+ (.*)$/gm)].map((match) => match[1] ?? '')
    expect(headings.filter((heading) => /retention/i.test(heading))).toEqual(['Retention'])
    const runbook = await read('docs/runbook.md')
    const section = runbook.slice(runbook.indexOf('### ApiInstanceDown'), runbook.indexOf('### DatabaseUnavailable'))
    expect(section).toContain('{{.State.ExitCode}}, OOMKilled {{.State.OOMKilled}}')
    expect(section).toMatch(/journalctl -k .*oom-kill/)
  })

  it('docs/configuration.md has a row for every setting of the service', async () => {
    const table = await read('docs/configuration.md')
    const named = [...table.matchAll(/^\|([^|]+)\|/gm)].flatMap((match) => {
      // A row may name a family by suffixes of its first name: `LOGIN_FAILURES_PER_CLIENT`, `_PER_ACCOUNT`.
      const names = [...match[1]!.matchAll(/`([A-Z_][A-Z0-9_]+)`/g)].map((name) => name[1]!)
      const first = names[0] ?? ''
      return names.map((name) => (name.startsWith('_') ? first.slice(0, first.lastIndexOf(`_${name.split('_')[1]}_`)) + name : name))
    })
    expect(Object.keys(EnvironmentSchema.properties).filter((name) => !named.includes(name))).toEqual([])
  })

  it('every variable read in src/, schemas/ and db/ is in the schema or the registry of the others', async () => {
    const known = new Set<string>([...DOCUMENTED, ...AMBIENT_VARIABLES, ...RETIRED_VARIABLES])
    const unknown = (await shippedSources()).flatMap(([file, source]) =>
      variablesRead(source)
        .filter((name) => !known.has(name))
        .map((name) => `${name} (${file})`),
    )
    // On failure: a service setting goes into EnvironmentSchema (read through src/config.ts), any
    // other into OTHER_VARIABLES (schemas/config.ts); then into .env.example.
    expect([...new Set(unknown)]).toEqual([])
  })

  it('the check of reads finds the ways the code reads the environment', () => {
    const source = `process.env.A_ONE; env.B_TWO; rawEnv['C_THREE']; // OTEL_FOUR_FIVE, not .env.example
      const duration = (name) => env[name]; duration('D_SIX')`
    expect(variablesRead(source).sort()).toEqual(['A_ONE', 'B_TWO', 'C_THREE', 'D_SIX', 'OTEL_FOUR_FIVE'])
  })

  it('.nvmrc, .node-version, engines and the start check name the same Node.js', async () => {
    const { engines } = JSON.parse(await read('package.json')) as { engines: { node: string } }
    expect(engines.node).toBe(`>=${REQUIRED_NODE_MAJOR}`)
    expect((await read('.nvmrc')).trim()).toBe(String(REQUIRED_NODE_MAJOR))
    expect((await read('.node-version')).trim()).toBe(String(REQUIRED_NODE_MAJOR))
  })
})
