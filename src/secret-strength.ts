/**
 * Whether a secret is fit for production (docs/operations.md, "Secrets and demo data in production"): long enough,
 * not of visibly low variety, and none of the documented demo values in any case. Plain functions,
 * so that every secret variable, list items included, goes through the same checks.
 */

/** Fewer different characters than this is a placeholder or a pattern, not a secret (Django requires 5). */
export const MIN_DISTINCT_CHARACTERS = 8

/** A secret's rule: its minimum length and whether the variable is a comma-separated list. */
export interface SecretRule {
  minLength: number
  list?: boolean
}

/**
 * The secrets checked in production, with their minimums: HS256 needs a key of 256 bits or more
 * (RFC 7518 §3.2); Django's deploy check wants 50 characters for SECRET_KEY, which Django's own
 * generator gives; webhook path secrets and HMAC keys 32 (128 bits of hex, the provider's usual).
 * A future secret variable (a list of fallbacks too) is one more row.
 */
export const PRODUCTION_SECRET_RULES = {
  JWT_SIGNING_KEY: { minLength: 32 },
  JWT_SIGNING_KEY_FALLBACKS: { minLength: 32, list: true },
  LEGACY_SECRET_KEY: { minLength: 50 },
  LEGACY_SECRET_KEY_FALLBACKS: { minLength: 50, list: true },
  ESIGN_WEBHOOK_SECRETS: { minLength: 32, list: true },
  ESIGN_WEBHOOK_HMAC_KEY: { minLength: 32 },
} as const satisfies Record<string, SecretRule>

/** Whether `text` is a shorter run repeated whole (`abcabcabc`), which a look at it gives away. */
function isRepeatedRun(text: string): boolean {
  return text.length > 1 && (text + text).indexOf(text, 1) < text.length
}

export interface DemoValues {
  /** The documented demo secrets, refused in any case. */
  demoValues: readonly string[]
}

/** A demo value with a blank around it, in another case or in look-alike characters is still the demo value. */
const foldedForComparison = (text: string): string => text.trim().normalize('NFKC').toLowerCase()

/** Why `secret` is unfit for production, or undefined when it is fit. */
export function secretWeakness(secret: string, minLength: number, { demoValues }: DemoValues): string | undefined {
  const folded = foldedForComparison(secret)
  if (demoValues.some((demo) => foldedForComparison(demo) === folded)) return 'a demo value'
  if (secret.length < minLength) return `shorter than ${minLength} characters`
  if (new Set(secret).size < MIN_DISTINCT_CHARACTERS) return `fewer than ${MIN_DISTINCT_CHARACTERS} different characters`
  if (isRepeatedRun(secret)) return 'a short run repeated'
  return undefined
}

/** The items of a comma-separated list, as the configuration reads them. */
export function listItems(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
}

/**
 * Why a variable's value is unfit, or undefined: a list is unfit when any item is (named by its
 * position, never by its value).
 */
export function variableWeakness(value: string, rule: SecretRule, demo: DemoValues): string | undefined {
  if (!rule.list) return secretWeakness(value, rule.minLength, demo)
  const items = listItems(value)
  for (const [index, item] of items.entries()) {
    const weakness = secretWeakness(item, rule.minLength, demo)
    if (weakness) return items.length > 1 ? `item ${index + 1} ${weakness}` : weakness
  }
  return undefined
}

/** How a variable holding a key is written: a list (comma-separated) and PEM (whose lines end with a line break) or not. */
export interface KeyFormat {
  list?: boolean
  pem?: boolean
}

/** PEM's lines end with a line break, as written or escaped (`\\n`, src/config.ts): not whitespace around a key. */
const TRAILING_LINE_BREAKS = /(\r?\n|\\n)+$/

/**
 * Why a secret or key variable is refused as written, or undefined: whitespace around its value or
 * around any item of a list. The value is used as written, so a blank makes it another secret than
 * the one meant (and than the demo check saw).
 */
export function whitespaceProblem(value: string, format: KeyFormat): string | undefined {
  const surrounded = (text: string): boolean => {
    const written = format.pem ? text.replace(TRAILING_LINE_BREAKS, '') : text
    return written !== written.trim()
  }
  const fix = '(remove it: the value is used as written)'
  if (surrounded(value)) return `leading or trailing whitespace ${fix}`
  const index = format.list ? value.split(',').findIndex(surrounded) : -1
  return index < 0 ? undefined : `item ${index + 1} has leading or trailing whitespace ${fix}`
}
