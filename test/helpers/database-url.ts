/** TEST_DATABASE_URL with another host/port and, optionally, a search_path for the service to use. */
export function databaseUrl(base: string, overrides: { port?: number; schema?: string } = {}): string {
  const url = new URL(base)
  if (overrides.port) {
    url.hostname = '127.0.0.1'
    url.port = String(overrides.port)
  }
  if (overrides.schema) url.searchParams.set('options', `-c search_path=${overrides.schema}`)
  return url.toString()
}
