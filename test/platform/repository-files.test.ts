import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { EnvironmentSchema } from '../../schemas/config.js'
import { REQUIRED_NODE_MAJOR } from '../../src/lib/node-version.js'

const read = (file: string) => readFile(new URL(`../../${file}`, import.meta.url), 'utf8')

describe('the files a newcomer looks for', () => {
  it('.env.example names every variable of the environment schema, each commented out', async () => {
    const example = await read('.env.example')
    const named = new Set([...example.matchAll(/^# ([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1]))
    // On failure: add the new variable to .env.example (and the README's configuration table).
    expect(Object.keys(EnvironmentSchema.properties).filter((name) => !named.has(name))).toEqual([])
    expect(example).not.toMatch(/^[A-Z]/m)
  })

  it('.nvmrc, .node-version, engines and the start check name the same Node.js', async () => {
    const { engines } = JSON.parse(await read('package.json')) as { engines: { node: string } }
    expect(engines.node).toBe(`>=${REQUIRED_NODE_MAJOR}`)
    expect((await read('.nvmrc')).trim()).toBe(String(REQUIRED_NODE_MAJOR))
    expect((await read('.node-version')).trim()).toBe(String(REQUIRED_NODE_MAJOR))
  })
})
