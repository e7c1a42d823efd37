import { describe, expect, it } from 'vitest'
import { redactUrl } from '../../src/logging.js'

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyX2lkIjoiMSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ'
const LINK_TOKEN = 'cx7ws0-3f1a9c2e4b5d6f708192a3b4c5d6e7f8'

describe('redactUrl: the request URL as logged', () => {
  it('masks the webhook secret and the confirmation token where the routes expect them', () => {
    expect(redactUrl('/webhook/esign/the-secret/')).toBe('/webhook/esign/[REDACTED]/')
    expect(redactUrl('/webhook/esign/the-secret')).toBe('/webhook/esign/[REDACTED]')
    expect(redactUrl(`/api/registration/v1/confirm-migration-account/MTA0Mg/${LINK_TOKEN}`)).toBe(
      '/api/registration/v1/confirm-migration-account/MTA0Mg/[REDACTED]',
    )
  })

  it('masks them in mistyped URLs too: case, repeated slashes, missing and extra segments', () => {
    for (const url of [
      '//webhook/esign/the-secret/',
      '/webhook//esign/the-secret/',
      '/Webhook/esign/the-secret/',
      '/webhook/ESIGN/the-secret',
      '/webhook/esign/x/the-secret',
      '/webhook/the-secret/',
      '/%77ebhook/esign/the-secret',
    ]) {
      expect(redactUrl(url)).not.toContain('the-secret')
    }
    for (const url of [
      `/api/registration/v1/confirm-migration-account/${LINK_TOKEN}`,
      `/api/registration/v1/confirm-migration-account//${LINK_TOKEN}`,
      `/api/registration/v1/confirm-migration-account/MTA0Mg/${LINK_TOKEN}/extra`,
      `/api/registration/v1/${LINK_TOKEN}`,
    ]) {
      expect(redactUrl(url)).not.toContain(LINK_TOKEN)
    }
  })

  it('masks every query value (no route reads one) and any JWT in the path', () => {
    expect(redactUrl(`/api/auth/v1/token?password=Demo%232026!&access_token=${JWT}&flag`)).toBe(
      '/api/auth/v1/token?password=[REDACTED]&access_token=[REDACTED]&[REDACTED]',
    )
    expect(redactUrl(`/api/v1/marketplace/${JWT}/title/x/documents`)).toBe('/api/v1/marketplace/[REDACTED]/title/x/documents')
  })

  it('leaves ordinary paths alone', () => {
    const path = '/api/company/v1/30000000-0000-4000-8000-000000000001/customers/70000000-0000-4000-8000-000000000001'
    expect(redactUrl(path)).toBe(path)
    expect(redactUrl('/health/live')).toBe('/health/live')
  })
})
