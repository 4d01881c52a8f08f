/**
 * The transport contract (test/support/transport-contract.ts) on the
 * embedded broker: no install, so it always runs, and it holds the embedded
 * broker to what the real ones do.
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { describe } from 'vitest'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { MemoryBroker } from '../../bridge/transports/memory/memory-transport.ts'
import { describeTransport } from '../support/transport-contract.ts'

describe('the bridge on the embedded broker', () => {
  describeTransport('the embedded broker', {
    settings: resolveSettings({ port: 'off' }, {}),
    memoryBroker: new MemoryBroker(),
    fixturesYml: fileURLToPath(new URL('../fixtures/brokers/memory.yml', import.meta.url)),
    callTimeoutMs: 20_000,
    maxMessageBytes: 5 * 1024 * 1024, // the largest default among the real brokers TrustGraph shares
    bigMessageBytes: 4 * 1024 * 1024,
    replicas: { kill: true },
    outage: 'the embedded broker lives and dies with the bridge',
    flowControl: { queue: () => `request:tg:memory-flow-${randomUUID().slice(0, 8)}` },
    unreachable: 'the embedded broker is always there',
  })
})
