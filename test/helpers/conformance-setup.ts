import { afterEach } from 'vitest'
import { takeViolations } from './openapi-conformance.js'

// Every test fails when an answer it received breaks the published OpenAPI document
// (test/helpers/openapi-conformance.ts), whatever the test itself asserts.
afterEach(() => {
  const violations = takeViolations()
  if (violations.length > 0) {
    throw new Error(`answers that break the OpenAPI document (/docs/json):\n${[...new Set(violations)].slice(0, 20).join('\n')}`)
  }
})
