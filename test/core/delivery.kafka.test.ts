/** Delivery (maxAge, answered once, dead letters) on Kafka: test/support/delivery-contract.ts. Never stops the broker. */
import { beforeAll, describe } from 'vitest'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { describeDelivery } from '../support/delivery-contract.ts'
import { KAFKA_URL, dropTopicsAndGroups, kafkaAdmin, kafkaAvailable, startKafka } from '../support/kafka.ts'

/** Deletes the suite's topics and groups. */
async function drop(run: string): Promise<void> {
  const admin = kafkaAdmin()
  const [topics, groups] = await Promise.all([admin.listTopics(), admin.listGroups()]).finally(() => admin.close())
  await dropTopicsAndGroups(
    topics.filter((t) => t.includes(run)),
    [...groups.keys()].filter((g) => g.includes(run)),
  )
}

describe.skipIf(!kafkaAvailable())('Kafka', () => {
  beforeAll(async () => {
    await startKafka() // the running one, or one started now (left running)
  }, 300_000)
  describeDelivery('Kafka', {
    transport: () => createTransport(KAFKA_URL),
    limitMs: 60_000,
    drop,
    newGroupsStartAtEnd: true,
  })
})
