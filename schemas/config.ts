import { Type, type Static } from '@sinclair/typebox'

/** Durations are whole seconds or a number with a unit: `300`, `500ms`, `90s`, `5m`, `12h`, `30d`. */
const Duration = Type.String({ pattern: '^[0-9]+(ms|[smhd])?$' })
const NonEmpty = Type.String({ minLength: 1 })

/**
 * The environment the service reads. Every value is a string as the environment gives it;
 * `src/config.ts` turns the validated strings into typed settings.
 */
export const EnvironmentSchema = Type.Object({
  NODE_ENV: Type.Optional(Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')])),
  PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
  HOST: Type.Optional(NonEmpty),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATABASE_POOL_SIZE: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  DATABASE_PREPARED_STATEMENTS: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  DATABASE_CONNECT_TIMEOUT: Type.Optional(Duration),
  DATABASE_STATEMENT_TIMEOUT: Type.Optional(Duration),
  DATABASE_REPLICA_URLS: Type.Optional(Type.String({ pattern: '^postgres(ql)?://[^,]+(,\\s*postgres(ql)?://[^,]+)*$' })),
  DATABASE_REPLICA_MAX_LAG: Type.Optional(Duration),
  HANDLER_TIMEOUT: Type.Optional(Duration),
  DRAIN_DELAY: Type.Optional(Duration),
  SHUTDOWN_TIMEOUT: Type.Optional(Duration),
  PGLITE_DIR: Type.Optional(NonEmpty),
  JWT_SIGNING_KEY: Type.Optional(Type.String({ minLength: 32 })),
  JWT_PRIVATE_KEY: Type.Optional(NonEmpty),
  JWT_PUBLIC_KEY: Type.Optional(NonEmpty),
  JWT_SIGNING_KEY_FALLBACKS: Type.Optional(Type.String()),
  JWT_PUBLIC_KEY_FALLBACKS: Type.Optional(Type.String()),
  JWT_KID_CUTOVER: Type.Optional(
    Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2}))?$' }),
  ),
  JWT_ISSUER: Type.Optional(NonEmpty),
  JWT_AUDIENCE: Type.Optional(NonEmpty),
  ACCESS_TOKEN_TTL: Type.Optional(Duration),
  REFRESH_TOKEN_TTL: Type.Optional(Duration),
  REFRESH_ABSOLUTE_TTL: Type.Optional(Duration),
  REFRESH_REUSE_GRACE: Type.Optional(Duration),
  LEGACY_SECRET_KEY: Type.Optional(NonEmpty),
  LEGACY_SECRET_KEY_FALLBACKS: Type.Optional(Type.String()),
  LINK_TTL: Type.Optional(Duration),
  ESIGN_WEBHOOK_SECRETS: Type.Optional(Type.String()),
  ESIGN_WEBHOOK_HMAC_KEY: Type.Optional(NonEmpty),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  PUBLIC_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  TRUST_PROXY: Type.Optional(NonEmpty),
  LOG_LEVEL: Type.Optional(Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)))),
  LOGIN_FAILURES_PER_CLIENT: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  LOGIN_FAILURES_PER_ACCOUNT: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  LOGIN_FAILURES_PER_ADDRESS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  LOGIN_FAILURE_WINDOW: Type.Optional(Duration),
  LOGIN_BURST_WAIT: Type.Optional(Duration),
  LOGIN_FAMILIAR_TTL: Type.Optional(Duration),
  ADDRESS_IPV6_PREFIX: Type.Optional(Type.String({ pattern: '^(3[2-9]|[4-9][0-9]|1[01][0-9]|12[0-8])$' })),
  IDEMPOTENCY_KEYS_PER_CALLER: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,7}$' })),
  IDEMPOTENCY_KEY_WINDOW: Type.Optional(Duration),
  LOGIN_FAILURE_MIN_MS: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
  PASSWORD_HASH_QUEUE_PER_THREAD: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$' })),
  REQUEST_TIMEOUT: Type.Optional(Duration),
  KEEP_ALIVE_TIMEOUT: Type.Optional(Duration),
  CONNECTION_TIMEOUT: Type.Optional(Duration),
  ALLOW_DEMO_DATA: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  METRICS_PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
  METRICS_HOST: Type.Optional(NonEmpty),
  HELPER_THREAD_NICENESS: Type.Optional(Type.String({ pattern: '^(1?[0-9])$' })),
  RATE_LIMITS: Type.Optional(
    Type.String({
      pattern: '^(reads|writes|authentication|webhooks|rejected)=[1-9][0-9]{0,8}(,(reads|writes|authentication|webhooks|rejected)=[1-9][0-9]{0,8})*$',
    }),
  ),
  RATE_LIMIT_WINDOW: Type.Optional(Duration),
  CONCURRENCY_LIMITS: Type.Optional(
    Type.String({ pattern: '^(reads|writes|authentication|webhooks)=[1-9][0-9]{0,5}(,(reads|writes|authentication|webhooks)=[1-9][0-9]{0,5})*$' }),
  ),
  LOAD_SHED: Type.Optional(
    Type.String({
      pattern: '^(off|(in_flight|event_loop_delay_ms|pool_waiting)=[1-9][0-9]{0,5}(,(in_flight|event_loop_delay_ms|pool_waiting)=[1-9][0-9]{0,5})*)$',
    }),
  ),
})

export type Environment = Static<typeof EnvironmentSchema>

/**
 * The variables read outside EnvironmentSchema, and by whom: a command's own settings, the
 * OpenTelemetry SDK's (read by the SDK itself once src/tracing.ts loads it), libpq's and libuv's.
 * With the schema's names this is every variable an operator may set: .env.example documents each,
 * and test/platform/repository-files.test.ts fails on a read in src/ of a name in neither list.
 */
export const OTHER_VARIABLES = {
  TOKEN_FAMILY_RETENTION: 'npm run retention',
  WEBHOOK_DELIVERY_RETENTION: 'npm run retention',
  WEBHOOK_RETRY_WINDOW: 'npm run retention',
  RETENTION_BATCH_SIZE: 'npm run retention',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'the service (tracing on) and the OpenTelemetry SDK',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'the service (tracing on) and the OpenTelemetry SDK',
  OTEL_EXPORTER_OTLP_HEADERS: 'the OpenTelemetry SDK',
  OTEL_SERVICE_NAME: 'the OpenTelemetry SDK',
  OTEL_RESOURCE_ATTRIBUTES: 'the OpenTelemetry SDK',
  OTEL_TRACES_SAMPLER: 'the OpenTelemetry SDK',
  OTEL_TRACES_SAMPLER_ARG: 'the OpenTelemetry SDK',
  PGOPTIONS: 'the PostgreSQL connections (libpq convention)',
  PGUSER: "the commands' database user when DATABASE_URL names none (libpq convention)",
  UV_THREADPOOL_SIZE: 'libuv, and the password hashing bound',
} as const

/** Read only to tell a deployment that still sets them that they are no longer read: not in .env.example. */
export const RETIRED_VARIABLES = ['ALLOW_DEMO_SECRETS'] as const

/** Read, but set by the system rather than an operator (npm, the login shell): not in .env.example. */
export const AMBIENT_VARIABLES = ['USER', 'npm_lifecycle_event', 'npm_package_version'] as const
