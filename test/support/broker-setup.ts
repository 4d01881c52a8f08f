/**
 * The set-up the broker contract suites (core/delivery.<broker>, whole/replicas.<broker>) share:
 * one describe per broker that skips without it and reuses the running one, and the `drop` that
 * deletes what a run left on it. Kept here so both suites clean up a broker the same way.
 */
import { connect as amqpConnect } from 'amqplib'
import { beforeAll, describe } from 'vitest'
import { dropTopicsAndGroups, KAFKA_URL, kafkaAdmin, kafkaAvailable, startKafka } from './kafka.ts'
import { PULSAR_ADMIN, PULSAR_URL, pulsarRunnable, startPulsar } from './pulsar.ts'
import { RABBITMQ_URL, rabbitmqctl, rabbitmqInstalled, startRabbitmq } from './rabbitmq.ts'

export interface BrokerSetup {
  name: string
  url: string
  /** Whether the broker can run here; the suite skips when not. */
  available(): boolean
  /** The running broker, or one started now (left running). */
  start(): Promise<unknown>
  startMs: number
  /** Deletes the queues, topics and groups whose names hold `run` (durable ones outlive the run). */
  drop(run: string): Promise<void>
}

export const RABBITMQ: BrokerSetup = {
  name: 'RabbitMQ',
  url: RABBITMQ_URL,
  available: rabbitmqInstalled,
  start: startRabbitmq,
  startMs: 120_000,
  async drop(run) {
    const list = async (what: string) =>
      (await rabbitmqctl(what, '-q', '--no-table-headers', 'name'))
        .split('\n')
        .map((n) => n.trim())
        .filter((n) => n.includes(run))
    const [queues, exchanges] = [await list('list_queues'), await list('list_exchanges')]
    const connection = await amqpConnect(RABBITMQ_URL)
    try {
      const channel = await connection.createChannel()
      for (const queue of queues) await channel.deleteQueue(queue)
      for (const exchange of exchanges) await channel.deleteExchange(exchange)
    } finally {
      await connection.close()
    }
  },
}

export const KAFKA: BrokerSetup = {
  name: 'Kafka',
  url: KAFKA_URL,
  available: kafkaAvailable,
  start: startKafka,
  startMs: 300_000,
  async drop(run) {
    const admin = kafkaAdmin()
    const [topics, groups] = await Promise.all([admin.listTopics(), admin.listGroups()]).finally(() => admin.close())
    await dropTopicsAndGroups(
      topics.filter((t) => t.includes(run)),
      [...groups.keys()].filter((g) => g.includes(run)),
    )
  },
}

/** Persistent topics only (their subscriptions go with them). */
export const PULSAR: BrokerSetup = {
  name: 'Pulsar',
  url: PULSAR_URL,
  available: pulsarRunnable,
  start: startPulsar,
  startMs: 300_000,
  async drop(run) {
    const response = await fetch(`${PULSAR_ADMIN}/admin/v2/persistent/tg/flow`)
    const topics = response.ok ? ((await response.json()) as string[]) : []
    for (const topic of topics.filter((t) => t.includes(run))) {
      await fetch(`${PULSAR_ADMIN}/admin/v2/${topic.replace('://', '/')}?force=true`, { method: 'DELETE' })
    }
  },
}

/** A describe named for the broker: skipped where it cannot run, the broker up before its tests. */
export function describeOnBroker(broker: BrokerSetup, body: () => void): void {
  describe.skipIf(!broker.available())(broker.name, () => {
    beforeAll(async () => {
      await broker.start()
    }, broker.startMs)
    body()
  })
}
