import type { Server } from 'node:http'
import fastifySensible from '@fastify/sensible'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyHttpOptions, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { EXAMPLES_KEYWORD } from '../schemas/responses.js'
import authRoutes from './auth/plugin.js'
import { AddressFailureLimit } from './auth/throttle/address-failure-limit.js'
import type { CounterStore } from './lib/counter-store.js'
import { addressKey, addressKeys } from './lib/client-address.js'
import type { Redis } from 'ioredis'
import { FallbackCounterStore } from './auth/throttle/fallback-counter-store.js'
import { FamiliarPlaces, familiarPlacesKey } from './auth/throttle/familiar-places.js'
import { LoginThrottle } from './auth/throttle/login-throttle.js'
import { MemoryCounterStore, type EvictedKind } from './auth/throttle/memory-counter-store.js'
import { RedisCounterStore } from './auth/throttle/redis-counter-store.js'
import { configurePasswordHashing, passwordHashQueueDepth } from './auth/passwords.js'
import companyRoutes from './company/plugin.js'
import type { Config } from './config.js'
import { openDatabase, type OpenOptions } from './db/open.js'
import { createPostgresDatabase, type DatabaseHandle } from './db/database.js'
import { answerClientError, refuseVersionlessRequests } from './lib/client-errors.js'
import { installStrictFormats } from './lib/formats.js'
import { buildLazySerializers } from './lib/lazy-serializers.js'
import { wellFormedJsonParser } from './lib/well-formed-json.js'
import { loggerOptions, RequestLogController, type LogDestination } from './logging.js'
import { gatewayCheck, GATEWAY_CHECK, requestIdGenerator, traceChildLoggerFactory } from './observability/trace-context.js'
import marketplaceRoutes from './marketplace/routes.js'
import authenticationPlugin from './tokens/authentication.js'
import databasePlugin from './plugins/database.js'
import deprecationPlugin from './plugins/deprecation.js'
import docsPlugin from './plugins/docs.js'
import drainingPlugin from './plugins/draining.js'
import errorsPlugin, { handleFrameworkError } from './plugins/errors.js'
import { warnOfPerInstanceState } from './observability/instance-warnings.js'
import singleHostHeader from './plugins/host-header.js'
import forwardedForCheck from './plugins/forwarded-for.js'
import healthRoutes from './plugins/health.js'
import requestDeadline from './plugins/request-deadline.js'
import { KeyQuota } from './idempotency/quota.js'
import { jwksRoutes } from './auth/routes.js'
import metricsPlugin from './plugins/metrics.js'
import { readBackupStatus } from './observability/backup-status.js'
import securityHeaders from './plugins/security-headers.js'
import tenancyPlugin from './tenancy/plugin.js'
import { openReplicaReads } from './tenancy/replica-reads.js'
import fairnessPlugin from './fairness/plugin.js'
import registrationRoutes from './registration/plugin.js'
import webhookRoutes from './webhooks/plugin.js'

export interface BuildOptions {
  /** A database opened by the caller (the tests share one per worker); the app will not close it. */
  database?: DatabaseHandle
  /** Where log lines go; defaults to stdout. */
  logDestination?: LogDestination
  /** Replaces the login-failure counters (tests give each app its own). */
  counterStore?: CounterStore
  /** Fills a new embedded database (src/server.ts passes the demo seed; see src/db/open.ts). */
  seedNewEmbedded?: OpenOptions['seedNewEmbedded']
}

/** Every secret the configuration holds, masked by value wherever a client puts one in a URL. */
function configuredSecrets(config: Config): string[] {
  const jwtSecret = [...(config.jwt.algorithm === 'HS256' ? [config.jwt.secret] : []), ...config.jwt.secretFallbacks]
  const hmacKey = config.esignWebhookHmacKey === undefined ? [] : [config.esignWebhookHmacKey]
  return [...config.esignWebhookSecrets, ...hmacKey, config.legacySecretKey, ...config.legacySecretKeyFallbacks, ...jwtSecret]
}

/**
 * A request must arrive whole within requestTimeout, headers included (a body trickled a byte at
 * a time would otherwise hold its connection forever); Node checks open requests every second.
 */
function httpTimeouts({ http }: Config): Pick<FastifyHttpOptions<Server>, 'requestTimeout' | 'keepAliveTimeout' | 'connectionTimeout' | 'http'> {
  const requestTimeout = http.requestTimeout * 1000
  return {
    requestTimeout,
    keepAliveTimeout: http.keepAliveTimeout * 1000,
    connectionTimeout: http.connectionTimeout * 1000,
    http: { headersTimeout: Math.min(60_000, requestTimeout), connectionsCheckingInterval: Math.min(1000, requestTimeout) },
  }
}

function serverOptions(config: Config, options: BuildOptions): FastifyServerOptions {
  // X-Request-Id and traceparent name a request's log trail: only the gateway may choose them.
  const fromGateway = gatewayCheck(config.trustProxy)
  ;(globalThis as Record<symbol, unknown>)[GATEWAY_CHECK] = fromGateway // for src/tracing.ts
  return {
    logger: loggerOptions(config.logLevel, options.logDestination, configuredSecrets(config)),
    genReqId: requestIdGenerator(fromGateway),
    childLoggerFactory: traceChildLoggerFactory(fromGateway),
    logController: new RequestLogController(),
    // Fastify also takes a hop count here, which its type does not spell out.
    trustProxy: config.trustProxy as FastifyServerOptions['trustProxy'],
    bodyLimit: 16 * 1024,
    ...httpTimeouts(config),
    clientErrorHandler: answerClientError,
    // Path secrets (the webhook's) may be long; the default of 100 made a longer one unreachable.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    frameworkErrors: handleFrameworkError,
    // src/plugins/draining.ts answers during shutdown, in the contract's shape.
    return503OnClosing: false,
    // Response serializers compile on first use: see src/lib/lazy-serializers.ts.
    schemaController: { compilersFactory: { buildSerializer: buildLazySerializers } },
    ajv: {
      customOptions: { removeAdditional: true, coerceTypes: false, allErrors: true, keywords: [EXAMPLES_KEYWORD] },
      onCreate: installStrictFormats,
    },
  }
}

/**
 * The instance's one Redis connection (REDIS_URL), opened when first asked for and shared by the
 * login counters and the write positions; undefined without REDIS_URL.
 */
function redisConnection(app: FastifyInstance, config: Config): () => Promise<Redis | undefined> {
  let opened: Promise<Redis> | undefined
  const open = async () => {
    // Loaded only when configured: most single-instance deployments never need it.
    const { Redis } = await import('ioredis')
    // Short timeouts: a request must not hang on the cache; its users fall back instead.
    const redis = new Redis(config.redisUrl!, { maxRetriesPerRequest: 1, commandTimeout: 500, connectTimeout: 2_000 })
    redis.on('error', (error) => app.log.warn({ err: error }, 'redis connection error'))
    app.addHook('onClose', async () => {
      await redis.quit().catch(() => redis.disconnect())
    })
    return redis
  }
  return () => (config.redisUrl ? (opened ??= open()) : Promise.resolve(undefined))
}

async function counterStore(options: BuildOptions, redis: Redis | undefined, app: FastifyInstance): Promise<CounterStore> {
  if (options.counterStore) {
    if (options.counterStore instanceof MemoryCounterStore) reportEvictions(options.counterStore, app)
    return options.counterStore
  }
  const memory = reportEvictions(new MemoryCounterStore(), app)
  if (!redis) return memory
  return new FallbackCounterStore(new RedisCounterStore(redis), memory, (error) =>
    app.log.warn({ err: error }, "login throttle: redis failed, using this instance's counters"),
  )
}

/** Evictions are counted, and logged at most once a minute with what went since the last line. */
function reportEvictions(store: MemoryCounterStore, app: FastifyInstance): MemoryCounterStore {
  let loggedAt = -Infinity
  const unlogged: Partial<Record<EvictedKind, number>> = {}
  store.onEvicted((kind, count) => {
    app.metrics.counterEvictions.labels(kind).inc(count)
    unlogged[kind] = (unlogged[kind] ?? 0) + count
    if (performance.now() - loggedAt < 60_000) return
    app.log.warn({ evicted: { ...unlogged } }, 'login throttle: the in-memory counters are full and evicted the entries least worth keeping')
    loggedAt = performance.now()
    for (const key of Object.keys(unlogged) as EvictedKind[]) delete unlogged[key]
  })
  return store
}

/** DATABASE_REPLICA_URLS's pools, each like the primary's; none on the embedded database. */
function replicaPools(app: FastifyInstance, config: Config, database: DatabaseHandle) {
  const urls = database.kind === 'postgres' ? config.databaseReplicaUrls : []
  const open = (url: string) =>
    createPostgresDatabase({
      connectionString: url,
      poolSize: config.databasePoolSize,
      preparedStatements: config.databasePreparedStatements,
      connectTimeoutMs: config.databaseConnectTimeoutMs,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      onConfigurationError: (message) => app.log.error({ configurationError: true }, `database replica configuration error: ${message}`),
    }).db
  return { urls, open }
}

/** Where each read runs (src/tenancy/replica-reads.ts): the primary, or a replica by the rule. */
async function decorateReads(app: FastifyInstance, config: Config, database: DatabaseHandle, redis: () => Promise<Redis | undefined>) {
  const reads = await openReplicaReads({
    primary: database.db,
    ...replicaPools(app, config, database),
    maxLagMs: config.databaseReplicaMaxLagMs,
    primaryUrl: config.databaseUrl,
    redis,
    log: app.log,
    metrics: (replicas) => app.metrics.replicaReads(replicas),
  })
  app.decorate('replicaReads', reads)
  app.addHook('onReady', () => reads.start())
  app.addHook('onClose', () => reads.close())
}

/** Builds the whole service from a configuration; no globals, nothing listens yet. */
export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(config, options)).withTypeProvider<TypeBoxTypeProvider>()
  refuseVersionlessRequests(app.server)
  // Demo data only where allowed: never in production without ALLOW_DEMO_DATA=true, whoever asks.
  const seedNewEmbedded = config.demoData ? options.seedNewEmbedded : undefined
  const database = options.database ?? (await openDatabase(config, app.log, { seedNewEmbedded }))

  app.decorateRequest('logResult', null)
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })
  // JSON only (§1): without its text/plain parser, any other media type is 415 before validation.
  app.removeContentTypeParser('text/plain')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, wellFormedJsonParser(app))
  await app.register(metricsPlugin, { requests: config.metricsPort !== undefined })
  // A database the caller opened (the tests share one) is theirs to observe.
  if (database.pool && !options.database && config.metricsPort !== undefined) {
    database.pool.onAcquire = app.metrics.databasePool(database.pool)
    app.metrics.backupStatus(() => readBackupStatus(database.db))
  }
  await app.register(forwardedForCheck, { config })
  warnOfPerInstanceState(app.log, config)
  await app.register(securityHeaders)
  await app.register(deprecationPlugin)
  await app.register(fastifySensible)
  await app.register(errorsPlugin)
  await app.register(singleHostHeader)
  // HANDLER_TIMEOUT (src/plugins/request-deadline.ts): never a hung request, POSTs included.
  await app.register(requestDeadline, { timeoutMs: config.handlerTimeoutMs })
  await app.register(drainingPlugin)
  const redis = redisConnection(app, config)
  // Before any database work: shedding, then each principal's quotas (src/fairness/).
  await app.register(fairnessPlugin, {
    settings: config.fairness,
    redis: await redis(),
    poolWaiting: () => database.pool?.waitingCount ?? 0,
    fleetSecret: config.jwt.algorithm === 'HS256' ? config.jwt.secret : config.jwt.privateKey,
    watchEventLoop: database.kind === 'postgres',
    addressKey: (address) => addressKey(address, config.addressIpv6Prefix),
  })
  await app.register(databasePlugin, { db: database.db, owned: options.database === undefined, problems: database.problems, probe: database.probe })
  await app.register(docsPlugin, { publicBaseUrl: config.publicBaseUrl })
  await app.register(authenticationPlugin, { config })
  await app.register(tenancyPlugin)
  const counters = await counterStore(options, options.counterStore ? undefined : await redis(), app)
  // Its own connections (Redis's subscription to releases), given or not.
  app.addHook('onClose', () => counters.close())
  // The Idempotency-Key quota, taken by a keyed transaction's claim (src/idempotency/keyed-transaction.ts).
  app.decorate('keyQuota', new KeyQuota(counters, config.idempotencyKeyQuota, app.log))
  await decorateReads(app, config, database, redis)

  configurePasswordHashing({ queuedPerThread: config.passwordHashQueuePerThread, observer: app.metrics.passwordHashing(passwordHashQueueDepth) })
  // Keyed by the signing key, which every instance shares: a new key forgets the familiar places.
  const placesKey = familiarPlacesKey(config.jwt.algorithm === 'HS256' ? config.jwt.secret : config.jwt.privateKey)
  const addresses = addressKeys(config.addressIpv6Prefix)
  const places = new FamiliarPlaces(counters, placesKey, config.loginFamiliarTtl * 1000, addresses)
  const throttle = new LoginThrottle(counters, config.loginThrottle, places, addresses)
  // Wrong webhook path secrets: counted per address like failed logins, with the same limit and window.
  const secretGuesses = new AddressFailureLimit(counters, 'webhook-secret', config.loginThrottle, config.addressIpv6Prefix)
  await app.register(healthRoutes, { prefix: '/health' })
  await app.register(jwksRoutes, { config })
  await app.register(authRoutes, { prefix: '/api/auth/v1', config, throttle })
  await app.register(companyRoutes, { prefix: '/api/company' })
  await app.register(marketplaceRoutes, { prefix: '/api/v1/marketplace' })
  await app.register(webhookRoutes, { config, secretGuesses })
  await app.register(registrationRoutes, { prefix: '/api/registration/v1', config })
  return app
}
