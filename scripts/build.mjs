// `npm run build` (after the type check): bundles the service and each command into one ES module
// each in dist/ with esbuild. Loading one file instead of ~860 takes ~40 % off the service's
// start-up (issue 6: ready in < 0.5 s on PostgreSQL).
import { readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { build } from 'esbuild'

const root = path.join(import.meta.dirname, '..')
const outdir = path.join(root, 'dist')

/** Left in node_modules and loaded by Node at run time. */
const external = [
  // A native addon, found next to its own files.
  'argon2',
  // The embedded database loads its WASM and data files next to its own module, and is imported
  // only when DATABASE_URL is unset: left out, it costs a PostgreSQL start nothing.
  '@electric-sql/pglite',
  'kysely-pglite-dialect',
  // Imported only when REDIS_URL is set.
  'ioredis',
  // Patched by the OpenTelemetry instrumentation when tracing is on (src/tracing.ts): a copy bundled
  // into dist/server.js could not be.
  'pg',
  // Loaded only with tracing on, by dist/tracing.js.
  '@opentelemetry/*',
  '@fastify/otel',
]

/**
 * Bundled CommonJS packages that read files next to their own (@fastify/swagger-ui serves its UI
 * assets from its folder; pino's transports start worker files) keep seeing their own folder:
 * `__dirname` and `__filename` are set to where the file is in node_modules, relative to the bundle.
 */
const ownDirname = {
  name: 'own-dirname',
  setup(builder) {
    builder.onLoad({ filter: /[\\/]node_modules[\\/].*\.c?js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8')
      if (!/\b__(?:dirname|filename)\b/.test(source) || /\b(?:const|let|var)\s+__(?:dirname|filename)\b/.test(source)) return undefined
      const fromBundle = path.relative(outdir, args.path).split(path.sep).join('/')
      const prologue = `var __filename = __bundlePath(${JSON.stringify(fromBundle)}), __dirname = __bundlePath(${JSON.stringify(path.posix.dirname(fromBundle))});`
      // On the file's first line, so that the source map's line numbers stay right.
      return { contents: `${prologue} ${source}`, loader: 'js', resolveDir: path.dirname(args.path) }
    })
  },
}

/** ES modules have no `require`, `__dirname` or `__filename`: the bundled CommonJS packages need them. */
const banner = [
  "import { createRequire as __createRequire } from 'node:module';",
  "import { dirname as __pathDirname, join as __pathJoin } from 'node:path';",
  "import { fileURLToPath as __fileURLToPath } from 'node:url';",
  'const require = __createRequire(import.meta.url);',
  'const __bundleDir = __pathDirname(__fileURLToPath(import.meta.url));',
  'const __bundlePath = (relative) => __pathJoin(__bundleDir, relative);',
].join('\n')

await rm(outdir, { recursive: true, force: true })
await build({
  absWorkingDir: root,
  // Every output directly in dist/: the paths of `ownDirname` are relative to that folder.
  entryPoints: {
    server: 'src/server.ts',
    migrate: 'src/cli/migrate.ts',
    seed: 'src/cli/seed.ts',
    unseed: 'src/cli/unseed.ts',
    'confirmation-link': 'src/cli/confirmation-link.ts',
    retention: 'src/cli/retention.ts',
    'disable-user': 'src/cli/disable-user.ts',
    // Imported by the service only when an OTLP endpoint is configured.
    tracing: 'src/tracing.ts',
  },
  outdir,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  external,
  banner: { js: banner },
  plugins: [ownDirname],
  // keepNames would keep every function's name exactly as written (bundling renames clashing ones,
  // e.g. a second `DatabaseError` becomes `DatabaseError2`), but it wraps each function created,
  // per request too, in a naming call: 1-2 % of a read's CPU in the bench profiles.
  keepNames: false,
  // For `node --enable-source-maps` when a stack trace must point into src/.
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
})
