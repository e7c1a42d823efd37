import { describe, expect, it } from 'vitest'
import { DEMO_PASSWORD, obtainTokens } from '../helpers/app.js'
import { useTwoInstances } from '../helpers/instances.js'
import { expectRanOnce, isReplay, newKey, openSolicitations, post, solicitationUrl } from './helpers.js'

describe('Idempotency-Key across two instances of the service on one database', () => {
  const two = useTwoInstances()

  it('runs 20 concurrent requests with one key, split between the instances, exactly once', async () => {
    const [first, second] = two.instances.map((instance) => instance.app)
    const bob = (await obtainTokens(first!, 'bob@beta.example', DEMO_PASSWORD)).access
    const key = newKey()
    const responses = await Promise.all(Array.from({ length: 20 }, (_, n) => post(n % 2 ? second! : first!, solicitationUrl(), bob, {}, key)))
    expectRanOnce(responses)
    expect(await openSolicitations()).toBe(1)
    const executed = responses.find((response) => response.statusCode === 201 && !isReplay(response))!
    for (const app of [first!, second!]) {
      const retry = await post(app, solicitationUrl(), bob, {}, key)
      expect([retry.statusCode, isReplay(retry), retry.body]).toEqual([201, true, executed.body])
    }
  })
})
