/** Three replicas on RabbitMQ, one killed mid-call: test/support/replica-contract.ts. Never stops the broker. */
import { connect as amqpConnect } from 'amqplib'
import { beforeAll, describe } from 'vitest'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { RABBITMQ_URL, rabbitmqctl, rabbitmqInstalled, startRabbitmq } from '../support/rabbitmq.ts'
import { describeReplicas } from '../support/replica-contract.ts'

/** Deletes the run's queues and exchanges (durable ones outlive it). */
async function drop(run: string): Promise<void> {
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
}

describe.skipIf(!rabbitmqInstalled())('RabbitMQ', () => {
  beforeAll(async () => {
    await startRabbitmq() // the running one, or one started now (left running)
  }, 120_000)
  describeReplicas('RabbitMQ', {
    broker: RABBITMQ_URL,
    transport: () => createTransport(RABBITMQ_URL),
    queues: (run) => ({ request: `flow:tg:${run}-request`, response: `flow:tg:${run}-response` }),
    requests: 2000,
    limitMs: 120_000,
    drop,
  })
})
