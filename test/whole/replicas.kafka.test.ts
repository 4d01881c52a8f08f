/** Three replicas on Kafka, one killed mid-call: test/support/replica-contract.ts. Never stops the broker. */
import { beforeAll, describe } from 'vitest'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { dropTopicsAndGroups, KAFKA_URL, kafkaAdmin, kafkaAvailable, startKafka } from '../support/kafka.ts'
import { describeReplicas } from '../support/replica-contract.ts'

/** Three partitions, one for each replica: with one, only one replica of the group would read. */
const BROKER = `${KAFKA_URL}?partitions=3`

/** Deletes the run's topics and groups. */
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
  describeReplicas('Kafka', {
    broker: BROKER,
    transport: () => createTransport(BROKER),
    queues: (run) => ({ request: `flow:tg:${run}-request`, response: `flow:tg:${run}-response` }),
    requests: 2000,
    limitMs: 180_000,
    drop,
  })
})
