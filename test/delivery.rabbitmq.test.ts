/** Delivery (maxAge, answered once, dead letters) on RabbitMQ: test/support/delivery-contract.ts. Never stops the broker. */
import { beforeAll, describe } from 'vitest'
import { createTransport } from '../bridge/transports/create-transport.ts'
import { describeDelivery } from './support/delivery-contract.ts'
import { RABBITMQ_URL, rabbitmqInstalled, startRabbitmq } from './support/rabbitmq.ts'

describe.skipIf(!rabbitmqInstalled())('RabbitMQ', () => {
  beforeAll(async () => {
    await startRabbitmq() // the running one, or one started now (left running)
  }, 120_000)
  describeDelivery('RabbitMQ', { transport: () => createTransport(RABBITMQ_URL), limitMs: 30_000 })
})
