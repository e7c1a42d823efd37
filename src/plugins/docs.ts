import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { OPTIONAL_BODY, Problem } from '../../schemas/common.js'
import { BEARER_SCHEME, documentInfo, documentServers, documentTags, securitySchemes } from '../../schemas/document.js'
import { HEADER_REQUIRED } from '../../schemas/responses.js'

const bearer = [{ [BEARER_SCHEME]: [] }]

/** The `<style>` inside Swagger UI's logo SVG (swagger-ui-bundle.js), which its own policy omits. */
const LOGO_STYLE_HASH = 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='

type OpenApiDocument = { paths?: Record<string, Record<string, Record<string, unknown>>> }
type HeaderObject = { required?: boolean; schema?: Record<string, unknown> }
type Responses = Record<string, { headers?: Record<string, HeaderObject> }>

/** Headers the service always sends (marked in schemas/responses.ts) are `required: true`. */
function applyRequiredHeaders(document: OpenApiDocument): OpenApiDocument {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const response of Object.values((operation.responses ?? {}) as Responses)) {
        for (const header of Object.values(response.headers ?? {})) {
          if (!header.schema?.[HEADER_REQUIRED]) continue
          delete header.schema[HEADER_REQUIRED]
          header.required = true
        }
      }
    }
  }
  return document
}

function applyOptionalBodies(document: OpenApiDocument): OpenApiDocument {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      if (!operation[OPTIONAL_BODY]) continue
      delete operation[OPTIONAL_BODY]
      const body = operation.requestBody as { required?: boolean } | undefined
      if (body) body.required = false
    }
  }
  return document
}

export interface DocsOptions {
  /** PUBLIC_BASE_URL: the one server `/docs/json` lists, when configured. */
  publicBaseUrl?: string | undefined
}

/**
 * The servers of `/docs/json`: PUBLIC_BASE_URL alone when configured, else the relative `/` first
 * (the UI's "Try it out" then calls the host it was fetched from). Never the request's Host header,
 * which the client chooses: an echo would put a forged address in a document others may be sent.
 */
function servedServers(publicBaseUrl: string | undefined): typeof documentServers {
  if (publicBaseUrl) return [{ url: publicBaseUrl, description: 'This deployment (PUBLIC_BASE_URL)' }]
  const relative = documentServers.filter((server) => server.url === '/')
  return [...relative, ...documentServers.filter((server) => server.url !== '/')]
}

/**
 * The OpenAPI 3 document made from the route schemas, served at `/docs/json` with a browsable UI
 * at `/docs`. Each route's security follows its `public` config, so the document cannot drift.
 */
export default fp(
  async function docsPlugin(app: FastifyInstance, options: DocsOptions) {
    const servers = servedServers(options.publicBaseUrl)
    app.addSchema(Problem)
    await app.register(fastifySwagger, {
      openapi: {
        openapi: '3.1.0',
        info: documentInfo,
        servers: documentServers,
        components: { securitySchemes },
        tags: documentTags,
      },
      transformObject: (documentObject) =>
        'openapiObject' in documentObject
          ? (applyRequiredHeaders(applyOptionalBodies(documentObject.openapiObject as OpenApiDocument)) as typeof documentObject.openapiObject)
          : documentObject.swaggerObject,
      refResolver: { buildLocalReference: (json, baseUri, fragment, index) => String(json.$id ?? `def-${index}`) },
    })
    app.addHook('onRoute', (route) => {
      if (!route.schema) return
      route.schema = { ...route.schema, security: route.config?.public ? [] : bearer } as typeof route.schema
    })
    await app.register(async (docs) => {
      docs.addHook('onRoute', (route) => {
        route.config = { ...route.config, public: true }
      })
      await docs.register(fastifySwaggerUi, {
        routePrefix: '/docs',
        transformSpecification: (document: Record<string, unknown>) => ({ ...document, servers }),
        // swagger-ui's own policy, with hashes of its inline scripts and of the <style> its logo's
        // SVG carries (test/platform/docs-browser.test.ts fails on any violation); the page may not
        // be framed, and it keeps the scheme it was served with (TLS ends at the gateway).
        staticCSP: true,
        transformStaticCSP: (policy) =>
          policy
            .replace("frame-ancestors 'self'", "frame-ancestors 'none'")
            .replace(' upgrade-insecure-requests;', '')
            .replace("style-src 'self'", `style-src 'self' '${LOGO_STYLE_HASH}'`),
      })
    })
  },
  { name: 'docs' },
)
