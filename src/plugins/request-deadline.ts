import { errorCodes, type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { WriteLedger, withWriteLedger } from '../db/write-ledger.js'
import { answerTimeout } from './errors.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** What this request's statements may have committed (src/db/write-ledger.ts). */
    writes: WriteLedger | null
  }
}

export interface RequestDeadlineOptions {
  /** HANDLER_TIMEOUT in milliseconds; 0: no bound. */
  timeoutMs: number
}

/**
 * HANDLER_TIMEOUT: every request is answered within it, `408` if its body is still arriving, else
 * `503` (src/plugins/errors.ts). Fastify's own `handlerTimeout` is not used: it stops its timer on
 * the request's 'close', which Node emits once a body has been read, so a POST was never bounded
 * (fastify/fastify#6725, #7033, open). This timer is the reply's: stopped when the response ends or
 * its connection closes (`reply.raw`'s 'close').
 *
 * When it runs out: the request's transactions whose COMMIT was not sent are closed, so nothing
 * commits after the answer, and its later statements are refused (src/db/write-ledger.ts); the 503
 * says whether something may have committed. `request.signal` aborts then, with reason
 * FST_ERR_HANDLER_TIMEOUT (as Fastify's did), or with an AbortError when the client goes away first.
 */
export default fp(
  async function requestDeadline(app: FastifyInstance, { timeoutMs }: RequestDeadlineOptions) {
    app.decorateRequest('writes', null)

    app.addHook('onRequest', (request, reply, done) => {
      const writes = new WriteLedger()
      request.writes = writes
      const controller = new AbortController()
      // Fastify's getter would abort on the request's 'close' too: once its body is read.
      Object.defineProperty(request, 'signal', { value: controller.signal, configurable: true })
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              if (reply.sent) return
              const error = new errorCodes.FST_ERR_HANDLER_TIMEOUT(timeoutMs, request.routeOptions.url ?? '(no route)')
              writes.abandon(error)
              controller.abort(error)
              // A listener of the signal may have answered.
              if (!reply.sent) answerTimeout(app, request, reply, error)
            }, timeoutMs)
          : undefined
      reply.raw.once('finish', () => clearTimeout(timer))
      reply.raw.once('close', () => {
        clearTimeout(timer)
        // Closed before its answer was written whole: the client went away.
        if (!reply.raw.writableFinished && !controller.signal.aborted) controller.abort()
      })
      done()
    })

    // The request's statements run in its ledger's context: after body parsing, whose events would lose it.
    app.addHook('preValidation', (request, _reply, done) => {
      if (request.writes) withWriteLedger(request.writes, done)
      else done()
    })
  },
  { name: 'request-deadline', dependencies: ['errors'] },
)
