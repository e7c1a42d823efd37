/**
 * docs/api.http read as VS Code's REST Client reads it: `@name = value` variables, requests
 * separated by `###`, `# @name x` keeping an answer for `{{x.response.body.field}}`.
 */
export interface HttpFileRequest {
  /** The `###` line's title. */
  title: string
  name: string | undefined
  method: string
  /** With its `{{…}}` left in: resolved at send time, by what earlier answers gave. */
  url: string
  headers: [string, string][]
  body: string
}

export function parseHttpFile(text: string): { variables: Record<string, string>; requests: HttpFileRequest[] } {
  const [preamble = '', ...blocks] = text.split(/^###/m)
  const variables = Object.fromEntries([...preamble.matchAll(/^@(\w+)\s*=\s*(.*)$/gm)].map((match) => [match[1] ?? '', (match[2] ?? '').trim()]))
  const requests = blocks.map((block) => {
    const [titleLine = '', ...lines] = block.split('\n')
    const name = lines.map((line) => /^#\s*@name\s+(\w+)/.exec(line)?.[1]).find(Boolean)
    const content = lines.filter((line) => !line.startsWith('#'))
    const start = content.findIndex((line) => line.trim() !== '')
    const [method = '', url = ''] = (content[start] ?? '').trim().split(/\s+/)
    const blank = content.findIndex((line, index) => index > start && line.trim() === '')
    const headerLines = content.slice(start + 1, blank === -1 ? undefined : blank)
    const headers = headerLines.map((line) => [line.slice(0, line.indexOf(':')).trim(), line.slice(line.indexOf(':') + 1).trim()] as [string, string])
    const body =
      blank === -1
        ? ''
        : content
            .slice(blank + 1)
            .join('\n')
            .trim()
    return { title: titleLine.trim(), name, method, url, headers, body }
  })
  return { variables, requests }
}

/** `{{var}}` and `{{name.response.body.path}}` replaced; a name no earlier request kept throws. */
export function resolveHttpFileText(text: string, variables: Record<string, string>, answers: Record<string, unknown>): string {
  return text.replace(/\{\{([\w.]+)\}\}/g, (_whole, reference: string) => {
    if (reference in variables) return variables[reference] ?? ''
    const [name = '', kind, part, ...path] = reference.split('.')
    if (kind !== 'response' || part !== 'body' || !(name in answers)) throw new Error(`docs/api.http: {{${reference}}} names nothing sent before`)
    const value = path.reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], answers[name])
    return String(value)
  })
}
