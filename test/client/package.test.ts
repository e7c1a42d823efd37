import { execFileSync } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import type * as Client from '../../packages/client/src/index.js'
import { checkConsumers } from '../../scripts/client-consumer-check.mjs'
import { DEMO_PASSWORD, useTestApp } from '../helpers/app.js'

/**
 * The client package as partners get it: built by `npm run client:build` (tsc, with .d.ts), its
 * JavaScript run against the service, its types compiled into a partner's program.
 */

const ctx = useTestApp()
const built = mkdtempSync(path.join(tmpdir(), 'client-build-'))
afterAll(() => rmSync(built, { recursive: true, force: true }))

describe('the built client package', () => {
  it('its dist/ logs in and reads over HTTP', async () => {
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'packages/client/tsconfig.json', '--outDir', path.join(built, 'dist')])
    cpSync('packages/client/package.json', path.join(built, 'package.json'))
    const { ApiClient } = (await import(pathToFileURL(path.join(built, 'dist', 'index.js')).href)) as typeof Client
    await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    const client = new ApiClient({ baseUrl: `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}` })
    await client.obtainTokenPair({ email: 'carol@gamma.example', password: DEMO_PASSWORD })
    expect((await client.getUserCompanies()).map((company) => company.name)).toEqual(['Gamma Comércio Ltda'])
  })

  it("its .d.ts compile a partner's program with the repository's TypeScript, Node and bundler resolution, no DOM or Node types", () => {
    const results = checkConsumers()
    expect(results.map(({ config, ok, output }) => ({ config, ok, output }))).toEqual([
      { config: 'nodenext', ok: true, output: '' },
      { config: 'bundler', ok: true, output: '' },
    ])
  })
})
