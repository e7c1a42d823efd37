import type { DestinationStream, LoggerOptions } from 'pino'
import type { FastifyRequest } from 'fastify'

export type LogDestination = DestinationStream

/** Path segments that are secrets: the webhook's sender secret and the confirmation link's token. */
const SECRET_PATHS: [RegExp, string][] = [
  [/^(\/webhook\/[^/?#]+\/)[^/?#]+/, '$1[REDACTED]'],
  [/^(\/api\/registration\/v1\/confirm-migration-account\/[^/?#]+\/)[^/?#]+/, '$1[REDACTED]'],
]

export function redactUrl(url: string): string {
  return SECRET_PATHS.reduce((masked, [pattern, replacement]) => masked.replace(pattern, replacement), url)
}

/** pino JSON logs with credentials and secrets removed (CONTRACT.md §5). */
export function loggerOptions(level: string, destination?: LogDestination): LoggerOptions & { stream?: DestinationStream } {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["content-hmac"]',
        'res.headers["set-cookie"]',
        '*.password',
        '*.refresh',
        '*.access',
        '*.token',
      ],
      censor: '[REDACTED]',
    },
    serializers: {
      req(request: FastifyRequest) {
        return {
          method: request.method,
          url: redactUrl(request.url),
          host: request.host,
          remoteAddress: request.ip,
        }
      },
    },
    ...(destination ? { stream: destination } : {}),
  }
}
