import { existsSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useTestApp } from '../helpers/app.js'

/** Debian's Chromium (.ci/run installs it); playwright-core brings no browser of its own. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
]
/** Generous: the machine is shared, and Swagger UI renders the whole document at once. */
const UI_TIMEOUT = 30_000
/** Set to a folder to keep screenshots of each step (to look at the page as a partner sees it). */
const SCREENSHOTS = process.env.DOCS_SCREENSHOTS

const ctx = useTestApp()

describe.skipIf(!existsSync(CHROMIUM))('/docs in a real browser', () => {
  let browser: Browser
  let page: Page
  let baseUrl: string
  const failedRequests: string[] = []
  /** What Chromium refused under the page's Content-Security-Policy (an inline style, a script). */
  const cspViolations: string[] = []

  beforeAll(async () => {
    await ctx.app.listen({ port: 0, host: '127.0.0.1' })
    baseUrl = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
    page = await browser.newPage({ viewport: { width: 1280, height: 1800 } })
    page.setDefaultTimeout(UI_TIMEOUT)
    // Swagger UI's own files must load under whatever security headers the service sends (a CSP).
    page.on('requestfailed', (request) => failedRequests.push(`${request.url()} ${request.failure()?.errorText ?? ''}`))
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text())
    })
    page.on('response', (response) => {
      if (response.url().includes('/docs/') && response.status() >= 400) failedRequests.push(`${response.url()} ${response.status()}`)
    })
  })

  afterAll(async () => {
    await browser?.close()
  })

  it('renders every operation of the document', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/docs/json' })).json<{
      paths: Record<string, Record<string, { operationId: string; tags: string[] }>>
    }>()
    await page.goto(`${baseUrl}/docs`)
    await page.locator('.opblock').first().waitFor()
    const operations = Object.values(document.paths).flatMap((byMethod) => Object.values(byMethod))
    expect(await page.locator('.opblock').count()).toBe(operations.length)
    for (const operation of operations) {
      await expect(page.locator(`#operations-${operation.tags[0]}-${operation.operationId}`).count()).resolves.toBe(1)
    }
    await expect(page.locator('.info .title').textContent()).resolves.toContain('Receivables-advance platform API')
    await expect(page.locator('.info').textContent()).resolves.toContain('Getting started')
    expect(failedRequests).toEqual([])
    expect(cspViolations).toEqual([])
    await snap('overview')
  })

  it('explains in the Authorize dialog how to get a token', async () => {
    await page.locator('.auth-wrapper .authorize').click()
    const dialog = page.locator('.modal-ux')
    await dialog.waitFor()
    const text = await dialog.textContent()
    expect(text).toContain('POST /api/auth/v1/token')
    expect(text).toContain('access')
    await snap('authorize')
    await dialog.locator('.close-modal').click()
  })

  it('logs in with route 1 through "Try it out", then answers route 4 with that token', async () => {
    const token = await page.locator('#operations-auth-obtainTokenPair')
    const login = await tryItOut(token)
    expect(login.status).toBe('200')
    const access = (JSON.parse(login.body) as { access: string }).access
    expect(access).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/)

    await page.locator('.auth-wrapper .authorize').click()
    const dialog = page.locator('.modal-ux')
    await dialog.locator('input').first().fill(access)
    await dialog.locator('button.authorize').click()
    await dialog.locator('.close-modal').click()

    const companies = await tryItOut(page.locator('#operations-company-getUserCompanies'))
    expect(companies.status).toBe('200')
    expect(JSON.parse(companies.body)).toEqual([expect.objectContaining({ name: 'Acme Indústria Ltda' })])
    expect(cspViolations).toEqual([])
    await snap('try-it-out')
  })

  async function snap(name: string): Promise<void> {
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/docs-${name}.png` })
  }

  /** Opens the operation, presses "Try it out" then "Execute" with its examples, reads the live answer. */
  async function tryItOut(operation: ReturnType<Page['locator']>): Promise<{ status: string; body: string }> {
    await operation.locator('.opblock-summary').first().click()
    await operation.locator('.try-out__btn').click()
    await operation.locator('.execute').click()
    const live = operation.locator('.live-responses-table .response')
    await live.first().waitFor()
    const status = (await live.locator('.response-col_status').first().textContent())?.trim() ?? ''
    const body = (await live.locator('.response-col_description pre').first().textContent()) ?? ''
    return { status, body }
  }
})
