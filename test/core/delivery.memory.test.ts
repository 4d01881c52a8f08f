/** Delivery (maxAge, answered once, dead letters) on the embedded broker: test/support/delivery-contract.ts. */
import { describe } from 'vitest'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { MemoryBroker } from '../../bridge/transports/memory/memory-transport.ts'
import { describeDelivery } from '../support/delivery-contract.ts'

describe('the embedded broker', () => {
  const broker = new MemoryBroker()
  describeDelivery('embedded', { transport: () => createTransport(undefined, broker), limitMs: 20_000 })
})
