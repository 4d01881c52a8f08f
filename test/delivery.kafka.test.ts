/** Delivery (maxAge, answered once, dead letters) on Kafka: test/support/delivery-contract.ts. Never stops the broker. */
import { beforeAll, describe } from 'vitest'
import { createTransport } from '../bridge/transports/create-transport.ts'
import { describeDelivery } from './support/delivery-contract.ts'
import { KAFKA_URL, kafkaAvailable, startKafka } from './support/kafka.ts'

describe.skipIf(!kafkaAvailable())('Kafka', () => {
  beforeAll(async () => {
    await startKafka() // the running one, or one started now (left running)
  }, 300_000)
  describeDelivery('Kafka', { transport: () => createTransport(KAFKA_URL), limitMs: 60_000 })
})
