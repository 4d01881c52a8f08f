/**
 * A Kafka reader across a rebalance, on a real Kafka: the client's stream
 * moves a partition back to its committed offset when the group is joined,
 * but a fetch sent before the rebalance and answered after it moves the
 * position on again (@platformatic/kafka's messages stream sets the next
 * offset from every fetch answer). Here the stream is found through the
 * client's own diagnostics channel and its position is moved on right after
 * the join, as such a late answer does; the reader must still hand out every
 * record after the committed offset again, or a request fetched before the
 * rebalance is never run, and its commits would pass it.
 */
import { randomUUID } from 'node:crypto'
import { channel } from 'node:diagnostics_channel'
import { Consumer, Producer, stringSerializer } from '@platformatic/kafka'
import type { MessagesStream } from '@platformatic/kafka'
import { afterAll, describe, expect, it } from 'vitest'
import { TopicReader } from '../../bridge/transports/kafka/reader.ts'
import { silentLogger } from '../../bridge/support/logger.ts'
import { createRetry } from '../../bridge/support/retry.ts'
import type { Delivery } from '../../bridge/transports/transport.ts'
import { committedOffset, dropTopicsAndGroups, kafkaAdmin, kafkaAvailable } from '../support/kafka.ts'
import { waitFor } from '../support/response-tap.ts'

const BROKERS = ['127.0.0.1:9092']
type AnyStream = MessagesStream<Buffer, Buffer, string, string>

describe.skipIf(!kafkaAvailable())('a Kafka reader across a rebalance', () => {
  const topic = `tb-rebalance-${randomUUID()}`
  const otherTopic = `${topic}-other`
  const group = `tb-rebalance-${randomUUID()}`

  afterAll(() => dropTopicsAndGroups([topic, otherTopic], [group]))

  it('reads a partition again from its committed offset when the stream has moved past it', async () => {
    const admin = kafkaAdmin()
    await admin.createTopics({ topics: [topic, otherTopic], partitions: 1, replicas: 1 })
    await admin.close()
    const producer = new Producer({
      clientId: 'tb-rebalance',
      bootstrapBrokers: BROKERS,
      serializers: { value: stringSerializer },
    })
    await producer.send({ messages: Array.from({ length: 12 }, (_, i) => ({ topic, partition: 0, value: String(i) })) })
    await producer.close()

    // The reader's stream, as the client announces it on creation.
    let stream: AnyStream | undefined
    const instances = channel('plt:kafka:instances')
    const onInstance = (message: unknown) => {
      const { type, instance } = message as { type: string; instance: AnyStream }
      if (type === 'messages-stream' && instance.consumer.groupId === group) stream = instance
    }
    instances.subscribe(onInstance)

    const deliveries: { record: number; delivery: Delivery }[] = []
    let rebalanced = false
    const afterRebalance: number[] = []
    const reader = new TopicReader({
      topic,
      groupId: group,
      role: 'competing',
      concurrency: 32,
      startAt: 'earliest',
      onDelivery: (delivery) => {
        const record = Number(Buffer.from(delivery.body).toString())
        deliveries.push({ record, delivery })
        if (rebalanced) {
          afterRebalance.push(record)
          delivery.ack()
        }
      },
      client: { clientId: 'tb-rebalance', bootstrapBrokers: BROKERS },
      reconnectRetry: createRetry(),
      logger: silentLogger,
      address: BROKERS[0]!,
    })
    let stopMoving = () => {}
    const joiner = new Consumer({ clientId: 'tb-rebalance-joiner', groupId: group, bootstrapBrokers: BROKERS })
    try {
      await reader.start()
      instances.unsubscribe(onInstance)
      expect(stream).toBeDefined()
      await waitFor('the twelve records handed out', () => deliveries.length === 12)
      // 0..4 answered and committed; 5..11 still being worked on.
      for (const { record, delivery } of deliveries) if (record < 5) delivery.ack()
      await waitFor('offset 5 committed', async () => (await committedOffset(group, topic)) === 5n)

      // Right after each join sets the position to the committed offset, move it on to 8, as a late fetch answer does.
      const key = `${topic}:0`
      let moved!: () => void
      const movedOnce = new Promise<void>((resolve) => (moved = resolve))
      const onOffsets = () => {
        if (!stream!.offsetsCommitted.has(key)) return // a join that left the partition unassigned for now
        rebalanced = true
        stream!.offsetsToFetch.set(key, 8n)
        moved()
      }
      stream!.on('offsets', onOffsets)
      stopMoving = () => stream!.off('offsets', onOffsets)
      // A second member (of another topic) joins and leaves: the group rebalances twice. The first join
      // may leave the partition unassigned (a leader that knows only its own topic), the second never does.
      await joiner.consume({ topics: [otherTopic] })
      await joiner.close(true)
      await movedOnce

      await waitFor('5..11 handed out again after the rebalance', () =>
        [5, 6, 7, 8, 9, 10, 11].every((record) => afterRebalance.includes(record)),
      )
      await waitFor('offset 12 committed', async () => (await committedOffset(group, topic)) === 12n)
    } finally {
      instances.unsubscribe(onInstance)
      stopMoving()
      for (const { delivery } of deliveries) delivery.ack()
      if (!joiner.closed) await joiner.close(true)
      await reader.close()
      await reader.shutdown()
    }
  })
})
