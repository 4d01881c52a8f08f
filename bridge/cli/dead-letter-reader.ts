/**
 * `toolbridge dead-letters list | replay`: reading a dead-letter queue back
 * and sending its requests again. Both read on the subscription the bridge
 * keeps the queue with (DEAD_LETTER_SUBSCRIPTION), from the earliest message
 * held, until nothing more arrives for a moment. `list` settles nothing, so
 * everything goes back to the queue when the caller closes the transport;
 * `replay` acknowledges only what it has published again.
 */
import { REPLAY_PROPERTY } from '../stores/answered-store.ts'
import { type DeadLetter, type ReplayTargets, readDeadLetter, replayPlan, replayTarget } from '../core/dead-letters.ts'
import { requestSubscription } from '../core/bridge.ts'
import { DEAD_LETTER_SUBSCRIPTION } from '../core/delivery-guard.ts'
import type { Consumer, Delivery, Transport } from '../transports/transport.ts'

export interface ReadOptions {
  /** Messages read at most. */
  limit: number
  /** Reading stops once nothing has arrived for this long. */
  idleMs: number
}

export const DEFAULT_READ: ReadOptions = { limit: 1000, idleMs: 2000 }

/** A message of the queue: a dead letter, or why it is not one. */
export type Listed = { delivery: Delivery } & ({ ok: true; deadLetter: DeadLetter } | { ok: false; message: string })

/**
 * Reads what the queue holds, unsettled: the caller settles what it wants to,
 * then closes the consumer (on RabbitMQ that waits for the broker, so the acks
 * before it have arrived) and the transport, which gives back the rest.
 */
async function readQueue(
  transport: Transport,
  queue: string,
  options: ReadOptions,
): Promise<{ listed: Listed[]; consumer: Consumer }> {
  const listed: Listed[] = []
  let idle: NodeJS.Timeout | undefined
  let done: () => void = () => {}
  const finished = new Promise<void>((resolve) => {
    done = resolve
  })
  const restartIdle = () => {
    clearTimeout(idle)
    idle = setTimeout(done, options.idleMs)
  }
  const consumer = await transport.consume(
    queue,
    { subscription: DEAD_LETTER_SUBSCRIPTION, concurrency: options.limit, startAt: 'earliest' },
    (delivery) => {
      if (listed.length >= options.limit) return // over the limit: left unsettled, it goes back with the rest
      listed.push({ delivery, ...readDeadLetter(delivery.body, delivery.properties) })
      if (listed.length >= options.limit) done()
      else restartIdle()
    },
  )
  restartIdle()
  await finished
  clearTimeout(idle)
  return { listed, consumer }
}

/** What the dead-letter queue holds, oldest first; nothing is taken from it. */
export async function listDeadLetters(
  transport: Transport,
  queue: string,
  options: ReadOptions = DEFAULT_READ,
): Promise<Listed[]> {
  const { listed, consumer } = await readQueue(transport, queue, options)
  await consumer.close()
  return listed
}

export interface Replayed {
  /** Sent again to their request queues and taken out of the dead-letter queue. */
  replayed: DeadLetter[]
  /** Left in the dead-letter queue, and why. */
  refused: { id: string; reason: string }[]
  /** Ids asked for that the queue does not hold. */
  notFound: string[]
}

/**
 * Publishes dead letters (those of `ids`, or all) to the request queues they
 * came from (or `targets.to`), with their original properties and the replay
 * mark (REPLAY_PROPERTY, so that the bridge runs them again rather than
 * answering from its answered-once memory), and takes them out of the
 * dead-letter queue once the broker has the request. One that cannot be
 * replayed (not a dead letter, not as the bridge writes them, its target not
 * allowed, its body no request) stays.
 */
export async function replayDeadLetters(
  transport: Transport,
  queue: string,
  ids: string[] | undefined,
  targets: ReplayTargets,
  options: ReadOptions = DEFAULT_READ,
): Promise<Replayed> {
  const wanted = ids === undefined ? undefined : new Set(ids)
  const result: Replayed = { replayed: [], refused: [], notFound: [] }
  const found = new Set<string>()
  const subscribed = new Set<string>()
  /**
   * A request queue keeps messages only for a subscription that exists (RabbitMQ drops what no queue is
   * bound for, Pulsar what no subscription holds): make the service's, as its bridge would, before the first.
   */
  const keepFor = async (target: string, service: string) => {
    if (subscribed.has(target)) return
    const attached = await transport.consume(
      target,
      { subscription: requestSubscription(service), concurrency: 1 },
      (delivery) => delivery.nack(),
    )
    await attached.close()
    subscribed.add(target)
  }
  const { listed, consumer } = await readQueue(transport, queue, options)
  for (const item of listed) {
    if (!item.ok) {
      if (wanted === undefined) result.refused.push({ id: '(none)', reason: item.message })
      continue
    }
    const { deadLetter } = item
    if (wanted !== undefined && !wanted.has(deadLetter.id)) continue
    found.add(deadLetter.id)
    const plan = replayPlan(deadLetter, targets)
    if (!plan.ok) {
      result.refused.push({ id: deadLetter.id, reason: plan.problem })
      continue
    }
    try {
      if (plan.service !== undefined) await keepFor(plan.queue, plan.service)
      await transport.publish(plan.queue, deadLetter.body, {
        ...deadLetter.properties,
        [REPLAY_PROPERTY]: deadLetter.id,
      })
    } catch (err) {
      result.refused.push({ id: deadLetter.id, reason: `could not publish it: ${(err as Error).message}` })
      continue
    }
    item.delivery.ack()
    result.replayed.push({ ...deadLetter, queue: plan.queue })
  }
  await consumer.close()
  if (wanted !== undefined) result.notFound = [...wanted].filter((id) => !found.has(id))
  return result
}

/**
 * One line for a dead letter: id, when, service, the queue a replay would send it to, reason,
 * attempts, request id; then, marked with `!`, why a replay would leave it where it is.
 */
export function describeDeadLetter(item: Listed, targets: ReplayTargets): string {
  if (!item.ok) return `(not a dead letter: ${item.message})`
  const d = item.deadLetter
  const requestId = d.properties.id ?? '(none)'
  const target = replayTarget(d, targets)
  const marks = [...d.oddities, ...(target.ok ? [] : [target.problem])].map((mark) => `  ! ${mark}`).join('')
  const to = target.ok ? target.queue : (targets.to ?? d.queue)
  return `${d.id}  ${d.time}  ${d.service} -> ${to}  ${d.kind}: ${d.message}  attempts ${d.attempts}  request id ${requestId}${marks}`
}
