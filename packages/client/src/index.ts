export {
  ApiClient,
  newKey,
  OPERATIONS,
  type Answer,
  type ClientOptions,
  type Input,
  type PartnerOperation,
  type PathParams,
  type RequestBody,
  type Result,
  type Retry,
  type RetryOptions,
  type Tokens,
} from './client.js'
export {
  ApiError,
  ConnectionError,
  isApiError,
  type ErrorCode,
  type OperationId,
  type ProblemCode,
  type ProblemFields,
  type UnknownCode,
} from './errors.js'
export type { FetchInit, FetchLike, FetchResponse } from './host.js'
export type { components, operations, paths } from './openapi.js'
export { rateLimitOf, type RateLimitQuota } from './rate-limit.js'
