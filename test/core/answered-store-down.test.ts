/**
 * A shared answered-once store that cannot be reached, through the bridge:
 * per service, `answeredStore.whenDown: run` (the default) runs the request
 * anyway and `refuse` answers it `unavailable` without running it; either
 * way a log line says why, /metrics counts it, and the bridge keeps serving.
 * The store is a real Redis client aimed at a port where nothing listens.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createBridge, type Bridge } from '../../bridge/core/bridge.ts'
import type { Invoker } from '../../bridge/invokers/invoker.ts'
import { readToolServices } from '../../bridge/project/tool-services.ts'
import type { AnsweredStores } from '../../bridge/stores/answered-store.ts'
import { createRedisAnsweredStores } from '../../bridge/stores/redis-answered-store.ts'
import { type Logger, silentLogger } from '../../bridge/support/logger.ts'
import { createMetrics } from '../../bridge/support/metrics.ts'
import { MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import { encodeRequest } from '../../shared/protocol.ts'
import { ResponseTap } from '../support/response-tap.ts'
import { redisInstalled } from '../support/redis.ts'

const NOTHING_LISTENS = 'redis://127.0.0.1:7364'

const services = readToolServices({
  functions: Object.fromEntries(
    (['run', 'refuse'] as const).map((whenDown) => [
      whenDown,
      {
        handler: 'f.handler',
        toolService: {
          id: `down-${whenDown}`,
          topic: `down-${whenDown}`,
          answeredStore: { whenDown },
          tools: [{ name: whenDown, description: 'd' }],
        },
      },
    ]),
  ),
})

describe.skipIf(!redisInstalled())('an answered-once store that cannot be reached', () => {
  let bridge: Bridge | undefined
  let stores: AnsweredStores | undefined
  afterEach(async () => {
    await bridge?.stop()
    await stores?.close()
  })

  it('runs the request anyway or refuses it, as the service chose; logged and counted', async () => {
    const errors: string[] = []
    const logger: Logger = { ...silentLogger, error: (_fields, message) => void errors.push(message) }
    stores = await createRedisAnsweredStores({ url: NOTHING_LISTENS, leaseMs: 30_000, logger })
    const calls: string[] = []
    const invoker: Invoker = {
      async invoke({ target }) {
        calls.push(target.functionName)
        return { ok: true, text: 'ran' }
      },
      prepare: async () => undefined,
      close: async () => {},
    }
    const transport = new MemoryTransport()
    const metrics = createMetrics({ processMetrics: false })
    bridge = createBridge({ transport, invoker, services, logger, metrics, answeredStores: stores })
    await bridge.start()
    for (const spec of services) {
      const tap = await ResponseTap.open(transport, spec.responseQueue)
      await transport.publish(spec.requestQueue, encodeRequest({ arguments: {} }), { id: 'r1' })
      const [answer] = await tap.ended('r1')
      if (spec.id === 'down-run') expect(answer!.response.response).toBe('ran')
      else {
        expect(answer!.response.error?.type).toBe('unavailable')
        expect(answer!.response.error?.message).toMatch(
          /^the answered-once store could not say whether this request was answered: redis:\/\/127\.0\.0\.1:7364: .*; not run, so that it cannot run twice \(answeredStore\.whenDown: refuse\)$/,
        )
      }
    }
    expect(calls).toStrictEqual(['run'])
    expect(errors).toContain('answered-once store unreachable at start')
    expect(errors.filter((m) => /^the answered-once store could not say/.test(m))).toHaveLength(2)
    const failures = await metrics.registry.getSingleMetric('toolbridge_answered_store_failures_total')!.get()
    expect(failures.values.map((v) => [v.labels.service, v.labels.outcome, v.value])).toStrictEqual([
      ['down-run', 'ran', 1],
      ['down-refuse', 'refused', 1],
    ])
    expect(bridge.ready).toBe(true)
  })
})
