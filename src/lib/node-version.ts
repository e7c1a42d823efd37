/** The Node.js major version the service is built and tested on (package.json's `engines`, .nvmrc). */
export const REQUIRED_NODE_MAJOR = 24

/** The one line to print when `version` is older than the service needs, else undefined. */
export function nodeVersionProblem(version: string = process.versions.node): string | undefined {
  const major = Number.parseInt(version, 10)
  if (major >= REQUIRED_NODE_MAJOR) return undefined
  return (
    `Node.js ${REQUIRED_NODE_MAJOR} or newer is needed; this is Node.js ${version}: ` +
    `install Node.js ${REQUIRED_NODE_MAJOR} (\`nvm install\` reads .nvmrc) and run the command again`
  )
}
