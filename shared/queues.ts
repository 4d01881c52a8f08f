/**
 * Queue names (docs/wire-contract.md#queue-names). Two spellings reach the bridge — a Pulsar URI
 * (`non-persistent://tg/request/joke`) and TrustGraph's broker-neutral
 * `class:topicspace:topic` (`request:tg:joke`) — and each backend maps them
 * the way TrustGraph's own backends do, so both sides meet on the same address.
 */
import { ToolbridgeError } from './errors.ts'

export const QUEUE_CLASSES = ['flow', 'request', 'response', 'notify'] as const
export type QueueClass = (typeof QUEUE_CLASSES)[number]

export interface QueueName {
  /** `flow`, `request`, `response`, `notify` — or a Pulsar namespace outside those. */
  cls: string
  topicspace: string
  topic: string
  /** Whether messages survive a broker restart: `flow` (and `persistent://` URIs). */
  persistent: boolean
}

const PART = /^[A-Za-z0-9._-]+$/
const PULSAR_URI = /^(persistent|non-persistent):\/\/([^/]+)\/([^/]+)\/(.+)$/

/** A queue name neither spelling allows: a configuration mistake, the same on every try. */
export class QueueNameError extends ToolbridgeError {
  constructor(message: string) {
    super('config', message)
    this.name = 'QueueNameError'
  }
}

function checkPart(name: string, what: string, value: string): string {
  if (!PART.test(value)) {
    throw new QueueNameError(`queue "${name}": ${what} "${value}" may only contain letters, digits, ".", "_" and "-"`)
  }
  return value
}

export function parseQueueName(name: string): QueueName {
  const uri = PULSAR_URI.exec(name)
  if (uri) {
    const [, persistence, tenant, namespace, topic] = uri as unknown as [string, string, string, string, string]
    return {
      cls: checkPart(name, 'namespace', namespace),
      topicspace: checkPart(name, 'tenant', tenant),
      topic: checkPart(name, 'topic', topic),
      persistent: persistence === 'persistent',
    }
  }
  const parts = name.split(':')
  if (parts.length !== 3) {
    throw new QueueNameError(
      `queue "${name}" is neither a Pulsar URI (non-persistent://tg/request/joke) nor class:topicspace:topic (request:tg:joke)`,
    )
  }
  const [cls, topicspace, topic] = parts as [string, string, string]
  if (!(QUEUE_CLASSES as readonly string[]).includes(cls)) {
    throw new QueueNameError(`queue "${name}": class "${cls}" must be one of ${QUEUE_CLASSES.join(', ')}`)
  }
  return {
    cls,
    topicspace: checkPart(name, 'topicspace', topicspace),
    topic: checkPart(name, 'topic', topic),
    persistent: cls === 'flow',
  }
}

/** `class:topicspace:topic`, the spelling every TrustGraph backend accepts. */
export const logicalName = (q: QueueName): string => `${q.cls}:${q.topicspace}:${q.topic}`

/** Pulsar topic URI: `{persistent|non-persistent}://topicspace/class/topic`. */
export const pulsarTopic = (q: QueueName): string =>
  `${q.persistent ? 'persistent' : 'non-persistent'}://${q.topicspace}/${q.cls}/${q.topic}`

/** RabbitMQ: one fanout exchange per logical queue. */
export const rabbitExchange = (q: QueueName): string => `${q.topicspace}.${q.cls}.${q.topic}`

/** RabbitMQ: a competing consumers' queue, bound to the exchange; durable only for `flow`. */
export const rabbitQueue = (q: QueueName, subscription: string): { name: string; durable: boolean } => ({
  name: `${rabbitExchange(q)}.${subscription}`,
  durable: q.cls === 'flow',
})

/** Kafka: one topic per logical queue. */
export const kafkaTopic = (q: QueueName): string => `${q.topicspace}.${q.cls}.${q.topic}`

export const QUEUE_STYLES = ['logical', 'pulsar'] as const
export type QueueStyle = (typeof QUEUE_STYLES)[number]

/** The request and response queues generated for a topic, in the chosen spelling. */
export function defaultQueues(topic: string, style: QueueStyle = 'logical'): { request: string; response: string } {
  const request: QueueName = { cls: 'request', topicspace: 'tg', topic, persistent: false }
  const response: QueueName = { ...request, cls: 'response' }
  const spell = style === 'pulsar' ? pulsarTopic : logicalName
  return { request: spell(request), response: spell(response) }
}
