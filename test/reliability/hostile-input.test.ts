import { describeHostileInput } from './hostile/suite.js'

/*
 * Property-based hostile input (issue 5): thousands of generated requests to every route, each
 * answer checked against docs/api.md §1 (never 5xx, problem details, WWW-Authenticate, documented
 * successes only) and the database checked unchanged by refused requests (hostile/runner.ts).
 * The seed is random per run; fast-check prints it (and a path) with the failing case. To replay:
 * FUZZ_SEED=<seed> FUZZ_PATH=<path> npx vitest run test/reliability/hostile-input.test.ts -t '<test name>'
 */

await describeHostileInput()
