/**
 * OpenTelemetry tracing, loaded by src/server.ts before the app only when OTEL_EXPORTER_OTLP_ENDPOINT
 * (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: without it, none of this is loaded and requests
 * pay nothing for it. Built as its own bundle (dist/tracing.js) with every OpenTelemetry package
 * and the instrumented drivers left in node_modules, where the instrumentations can patch them.
 *
 * The SDK's own packages do the work (spans, W3C propagation, OTLP/HTTP export, batching, and the
 * http, Fastify, pg and ioredis instrumentations): they follow the specification and the
 * collectors' expectations, which a hand-written equivalent would have to chase.
 */
import { createRequire } from 'node:module'
import { trace } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { registerInstrumentations } from '@opentelemetry/instrumentation'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import type { IncomingMessage, Server } from 'node:http'
import { ACTIVE_TRACE_ID, GATEWAY_CHECK, setAsideClientTraceparent, type GatewayCheck } from './observability/trace-context.js'

const require = createRequire(import.meta.url)

const provider = new NodeTracerProvider({
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the defaults.
  resource: resourceFromAttributes({
    [ATTR_SERVICE_NAME]: 'receivables-api',
    [ATTR_SERVICE_VERSION]: process.env.npm_package_version ?? '0.1.0',
  }).merge(detectResources({ detectors: [envDetector] })),
  // OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS.
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
})
// W3C trace context only (no baggage): the gateway's traceparent is honoured on the way in (a client's is set aside below).
provider.register({ propagator: new W3CTraceContextPropagator() })

registerInstrumentations({
  tracerProvider: provider,
  instrumentations: [
    new HttpInstrumentation({
      // The service calls nothing outside: no client spans, and no traceparent sent on by http.
      disableOutgoingRequestInstrumentation: true,
      // Probes and scrapes would drown the traces of real requests.
      ignoreIncomingRequestHook: (request) => request.url === '/health/live' || request.url === '/health/ready' || request.url === '/metrics',
    }),
    new FastifyOtelInstrumentation({ registerOnInitialization: true }),
    // Statements without their parameter values (personal data), and none outside a request.
    new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
    new IORedisInstrumentation({ requireParentSpan: true }),
  ],
})

// The instrumentations patch a module when it is required. The service's bundle may have loaded
// http and pg already (its imports run first): requiring them again here lets the hooks patch the
// loaded copies, whose prototypes the service uses. ioredis is loaded later, on demand.
for (const name of ['node:http', 'pg', 'pg-pool']) require(name)

// The http instrumentation reads traceparent as the server emits 'request', before any listener of
// the service: a client's (not the gateway's, per TRUST_PROXY) is set aside first, so that the
// request starts a trace of its own instead of writing into another's.
const http = require('node:http') as { Server: { prototype: Server } }
const instrumentedEmit = http.Server.prototype.emit as (this: Server, event: string | symbol, ...args: unknown[]) => boolean
http.Server.prototype.emit = function emit(this: Server, event: string | symbol, ...args: unknown[]) {
  const fromGateway = (globalThis as Record<symbol, GatewayCheck | undefined>)[GATEWAY_CHECK] ?? (() => false)
  if (event === 'request') setAsideClientTraceparent(args[0] as IncomingMessage, fromGateway)
  return instrumentedEmit.call(this, event, ...args)
} as Server['emit']

// Log lines carry the active span's trace id (src/observability/trace-context.ts).
;(globalThis as Record<symbol, unknown>)[ACTIVE_TRACE_ID] = () => trace.getActiveSpan()?.spanContext().traceId

/** Spans still buffered are sent before the process exits (SIGTERM goes through close-with-grace first). */
export const shutdownTracing = (): Promise<void> => provider.shutdown()
