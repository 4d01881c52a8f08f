/** Delivery (maxAge, answered once, dead letters) on Pulsar: test/support/delivery-contract.ts. Never stops the broker. */
import { beforeAll, describe } from 'vitest'
import { createTransport } from '../bridge/transports/create-transport.ts'
import { describeDelivery } from './support/delivery-contract.ts'
import { PULSAR_URL, pulsarRunnable, startPulsar } from './support/pulsar.ts'

describe.skipIf(!pulsarRunnable())('Pulsar', () => {
  beforeAll(async () => {
    await startPulsar() // the running one, or one started now (left running)
  }, 300_000)
  describeDelivery('Pulsar', { transport: () => createTransport(PULSAR_URL), limitMs: 60_000 })
})
