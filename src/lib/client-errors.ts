import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { problemBody } from './problem.js'

interface ClientProblem {
  status: number
  code: string
  detail: string
}

/** Node's parser and timeout errors, raised before any route runs, as the contract's problems. */
export function clientProblemOf(error: NodeJS.ErrnoException): ClientProblem {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, code: 'request_timeout', detail: 'The request was not received in time.' }
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'header_too_large', detail: 'The request headers are too large.' }
    default:
      return { status: 400, code: 'bad_request', detail: 'Malformed HTTP request.' }
  }
}

/** The response Node lets us write: none once a response of this socket has started. */
function mayAnswer(socket: Socket): boolean {
  // The in-flight response, as Node's own socketOnError checks it (a private field of http's).
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage
  return socket.writable && !inFlight?.headersSent
}

/**
 * Fastify's clientErrorHandler: errors raised by Node's HTTP parser or its request timeout (431,
 * CL+TE, duplicate Content-Length, a body sent too slowly) answer in the problem shape, then close.
 */
export function answerClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const { status, code, detail } = clientProblemOf(error)
  this.log.debug({ err: error, status }, 'client error before routing')
  if (mayAnswer(socket)) {
    const problem = problemBody(status, code, detail)
    const body = JSON.stringify(problem)
    socket.write(
      `HTTP/1.1 ${status} ${problem.title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    )
  }
  socket.destroy(error)
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void

/**
 * A request line without an HTTP version (HTTP/0.9's `GET /path`) is answered 400 before Fastify
 * sees it: no client of this API sends one, and Node takes it without the Host header it requires
 * of HTTP/1.1. Fastify's own listener is wrapped, so that nothing else changes.
 */
export function refuseVersionlessRequests(server: Server): void {
  const listeners = server.listeners('request') as RequestListener[]
  server.removeAllListeners('request')
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.httpVersionMajor >= 1) {
      for (const listener of listeners) listener.call(server, request, response)
      return
    }
    const body = JSON.stringify(problemBody(400, 'bad_request', 'Malformed HTTP request.'))
    response.shouldKeepAlive = false
    response.writeHead(400, { 'content-type': 'application/problem+json', 'x-content-type-options': 'nosniff', connection: 'close' }).end(body)
  })
}
