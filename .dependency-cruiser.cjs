/* global module */
/**
 * The import rules of the house (issue 16), checked by `npm run lint:deps`, part of `npm run lint`.
 * Layers, lowest first: src/vocabulary.ts; schemas/ and db/ (migrations, seed); src/lib/, src/db/;
 * src/tokens/ (issue and verify tokens, their families) and src/idempotency/; src/tenancy/ (the route constructs);
 * the domains (src/auth, src/company/<subdomain>, src/marketplace, src/registration, src/webhooks);
 * src/plugins/ (infrastructure); src/app.ts, src/server.ts, src/cli/. Imports point down.
 * Cycles between folders are checked by scripts/folder-cycles.mjs on the same cruise.
 */
const DOMAINS = '(auth|company|marketplace|registration|webhooks)'

module.exports = {
  forbidden: [
    {
      name: 'schemas-import-only-the-vocabulary',
      comment: 'schemas/ describe the wire format; from the service they may use only the vocabulary (and the demo ids for examples).',
      severity: 'error',
      from: { path: '^schemas/' },
      to: { path: '^(src|db)/', pathNot: ['^src/vocabulary\\.ts$', '^db/seed/ids\\.ts$'] },
    },
    {
      name: 'db-imports-only-the-vocabulary',
      comment: 'Migrations, table types and seeds stand alone: of the service, the vocabulary only.',
      severity: 'error',
      from: { path: '^db/' },
      to: { path: '^src/', pathNot: ['^src/vocabulary\\.ts$'] },
    },
    {
      name: 'table-types-as-types-only',
      comment: 'db/types.ts describes the tables the migrations make; it has nothing to run.',
      severity: 'error',
      from: {},
      to: { path: '^db/types\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'demo-seed-only-from-the-starts',
      comment: 'Demo data is reached by the embedded starts (src/server.ts, src/dev-server.ts) and the command line, never by a generic path.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/(dev-)?server\\.ts$', '^src/cli/'] },
      to: { path: '^db/seed/demo\\.ts$' },
    },
    {
      name: 'lower-layers-do-not-import-up',
      comment: 'The vocabulary, lib, db, tokens, idempotency and tenancy know nothing of the domains, the plugins or the app.',
      severity: 'error',
      from: { path: '^src/(vocabulary\\.ts|lib/|db/|tokens/|idempotency/|tenancy/)' },
      to: { path: [`^src/${DOMAINS}/`, '^src/(plugins|cli)/', '^src/(app|server|dev-server)\\.ts$'] },
    },
    {
      name: 'tokens-and-idempotency-below-tenancy',
      comment: 'Tenancy wires a route from the token check and the idempotency hooks; they know nothing of it.',
      severity: 'error',
      from: { path: '^src/(tokens|idempotency)/' },
      to: { path: '^src/tenancy/' },
    },
    {
      name: 'domains-do-not-import-plugins',
      comment: 'src/plugins/ is infrastructure registered by the app; a domain gets what it needs by decoration.',
      severity: 'error',
      from: { path: `^src/${DOMAINS}/` },
      to: { path: '^src/plugins/' },
    },
    {
      name: 'domains-do-not-import-each-other',
      comment:
        "Shared things go down a layer (tenancy, tokens, lib, db). One exception: auth's password hashing, " +
        'with which registration sets a confirmed account its password.',
      severity: 'error',
      from: { path: `^src/${DOMAINS}/` },
      to: { path: `^src/${DOMAINS}/`, pathNot: ['^src/$1/', '^src/auth/passwords\\.ts$'] },
    },
    {
      name: 'company-subdomains-do-not-import-each-other',
      severity: 'error',
      from: { path: '^src/company/([^/]+)/' },
      to: { path: '^src/company/', pathNot: '^src/company/$1/' },
    },
    {
      name: 'no-module-cycles',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
}
