import { describe, expect, it } from 'vitest'
import { threadPoolSize } from '../../src/auth/passwords.js'

describe('threadPoolSize (how many password hashes run at once)', () => {
  it("is libuv's default of 4 when UV_THREADPOOL_SIZE is unset", () => {
    expect(threadPoolSize({})).toBe(4)
  })

  it('follows UV_THREADPOOL_SIZE', () => {
    expect(threadPoolSize({ UV_THREADPOOL_SIZE: '8' })).toBe(8)
    expect(threadPoolSize({ UV_THREADPOOL_SIZE: '1' })).toBe(1)
  })

  it('is one thread for a value libuv reads as 0, and at most 1024', () => {
    expect(threadPoolSize({ UV_THREADPOOL_SIZE: '0' })).toBe(1)
    expect(threadPoolSize({ UV_THREADPOOL_SIZE: 'many' })).toBe(1)
    expect(threadPoolSize({ UV_THREADPOOL_SIZE: '5000' })).toBe(1024)
  })
})
