/**
 * Fails on an import cycle between folders (issue 16), from dependency-cruiser's JSON on stdin:
 * `depcruise … --output-type json | node scripts/folder-cycles.mjs`. Each folder is one node; a file
 * directly under src/ (app, server, config, logging, vocabulary) is its own node, because those are
 * the app level and the vocabulary, not one folder. dependency-cruiser's own folder scope cannot
 * make that exception.
 */
import { text } from 'node:stream/consumers'
import path from 'node:path'
import process from 'node:process'

// Read as a stream: readFileSync(0) fails with EAGAIN when stdin is a non-blocking pipe.
const { modules } = JSON.parse(await text(process.stdin))
const nodeOf = (file) => (path.dirname(file) === 'src' ? file : path.dirname(file))
const inProject = (file) => /^(src|schemas|db)\//.test(file)

const edges = new Map()
for (const module of modules.filter((m) => inProject(m.source))) {
  const from = nodeOf(module.source)
  for (const dependency of module.dependencies.filter((d) => inProject(d.resolved))) {
    const to = nodeOf(dependency.resolved)
    if (to === from) continue
    if (!edges.has(from)) edges.set(from, new Map())
    if (!edges.get(from).has(to)) edges.get(from).set(to, `${module.source} -> ${dependency.resolved}`)
  }
}

// Tarjan's strongly connected components: any component of more than one node is a cycle.
let index = 0
const indices = new Map()
const lowlinks = new Map()
const stack = []
const onStack = new Set()
const components = []
function connect(node) {
  indices.set(node, index)
  lowlinks.set(node, index++)
  stack.push(node)
  onStack.add(node)
  for (const next of edges.get(node)?.keys() ?? []) {
    if (!indices.has(next)) {
      connect(next)
      lowlinks.set(node, Math.min(lowlinks.get(node), lowlinks.get(next)))
    } else if (onStack.has(next)) lowlinks.set(node, Math.min(lowlinks.get(node), indices.get(next)))
  }
  if (lowlinks.get(node) !== indices.get(node)) return
  const component = []
  let member
  do {
    member = stack.pop()
    onStack.delete(member)
    component.push(member)
  } while (member !== node)
  if (component.length > 1) components.push(component)
}
for (const node of edges.keys()) if (!indices.has(node)) connect(node)

for (const component of components) {
  process.stderr.write(`folder cycle: ${component.join(', ')}\n`)
  for (const from of component) {
    for (const [to, example] of edges.get(from) ?? []) if (component.includes(to)) process.stderr.write(`  ${example}\n`)
  }
}
if (components.length > 0) process.exit(1)
process.stdout.write(`no cycle between folders (${edges.size} folders with imports)\n`)
