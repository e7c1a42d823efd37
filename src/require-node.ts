import { nodeVersionProblem } from './lib/node-version.js'

// Imported first by the service and every command: on an older Node.js, one line and exit 1
// before anything else runs, instead of a failure somewhere further on.
const problem = nodeVersionProblem()
if (problem) {
  process.stderr.write(`${problem}\n`)
  process.exit(1)
}
