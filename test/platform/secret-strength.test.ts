import { describe, expect, it } from 'vitest'
import { EnvironmentSchema } from '../../schemas/config.js'
import { DEMO_SECRETS } from '../../src/config.js'
import { MIN_DISTINCT_CHARACTERS, PRODUCTION_SECRET_RULES, secretWeakness, variableWeakness } from '../../src/secret-strength.js'

const demo = { demoValues: Object.values(DEMO_SECRETS) }
const STRONG = 'Zq3vL9xT2mR7wK4pN8cB1fH6jD5sG0aY'

describe('secret strength (issue 26, items 3 and 4)', () => {
  it('passes a random secret of the minimum length', () => {
    expect(secretWeakness(STRONG, 32, demo)).toBeUndefined()
  })

  it.each([
    ['a', 32, 'shorter than 32 characters'],
    [STRONG.slice(0, 31), 32, 'shorter than 32 characters'],
    ['a'.repeat(64), 32, `fewer than ${MIN_DISTINCT_CHARACTERS} different characters`],
    ['abcabcabcabcabcabcabcabcabcabcabcabc', 32, `fewer than ${MIN_DISTINCT_CHARACTERS} different characters`],
    ['abcdefghabcdefghabcdefghabcdefgh', 32, 'a short run repeated'],
    ['demo-esign-secret', 8, 'a demo value'],
    ['DEMO-ESIGN-SECRET', 8, 'a demo value'],
    // Any demo value, whichever variable it was documented for.
    [DEMO_SECRETS.JWT_SIGNING_KEY.toUpperCase(), 32, 'a demo value'],
    ['Demo-Legacy-Secret', 8, 'a demo value'],
    // As it would be compared once trimmed, case-folded and in compatibility form (issue 42, item 2).
    [` ${DEMO_SECRETS.JWT_SIGNING_KEY}`, 32, 'a demo value'],
    [`${DEMO_SECRETS.JWT_SIGNING_KEY.toUpperCase()}\t`, 32, 'a demo value'],
    ['ｄｅｍｏ-ｅｓｉｇｎ-ｓｅｃｒｅｔ', 8, 'a demo value'],
  ])('refuses %j (minimum %i): %s', (secret, minLength, reason) => {
    expect(secretWeakness(secret, minLength, demo)).toBe(reason)
  })

  it('checks every item of a list, naming the item by its position only', () => {
    const rule = PRODUCTION_SECRET_RULES.ESIGN_WEBHOOK_SECRETS
    expect(variableWeakness(`${STRONG}, ${STRONG.toLowerCase()}x`, rule, demo)).toBeUndefined()
    expect(variableWeakness(`${STRONG},short`, rule, demo)).toBe('item 2 shorter than 32 characters')
    expect(variableWeakness('demo-esign-secret', rule, demo)).toBe('a demo value')
    expect(variableWeakness('demo-legacy-secret', PRODUCTION_SECRET_RULES.LEGACY_SECRET_KEY_FALLBACKS, demo)).toBe('a demo value')
  })

  it('documents its minimums: 32 for the JWT key, webhook secrets and HMAC key, 50 for the old platform key', () => {
    expect(PRODUCTION_SECRET_RULES).toEqual({
      JWT_SIGNING_KEY: { minLength: 32 },
      JWT_SIGNING_KEY_FALLBACKS: { minLength: 32, list: true },
      LEGACY_SECRET_KEY: { minLength: 50 },
      LEGACY_SECRET_KEY_FALLBACKS: { minLength: 50, list: true },
      ESIGN_WEBHOOK_SECRETS: { minLength: 32, list: true },
      ESIGN_WEBHOOK_HMAC_KEY: { minLength: 32 },
    })
  })

  it('has a rule for every secret variable of the environment, lists of fallbacks included (a new one fails here)', () => {
    // PEM keys are not strings to judge by their characters; the ALLOW_ switches are not secrets.
    const secrets = Object.keys(EnvironmentSchema.properties)
      .filter((name) => /(SECRET|_KEY)(S|_FALLBACKS)?$/.test(name))
      .filter((name) => !/PRIVATE_KEY|PUBLIC_KEY|^ALLOW_/.test(name))
    expect(secrets.sort()).toEqual(Object.keys(PRODUCTION_SECRET_RULES).sort())
  })
})
