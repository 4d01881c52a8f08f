import { describe, expect, it } from 'vitest'
import {
  defaultQueues,
  kafkaTopic,
  logicalName,
  parseQueueName,
  pulsarTopic,
  QueueNameError,
  rabbitExchange,
  rabbitQueue,
  type QueueName,
} from '../../shared/queues.ts'
import { thrownBy } from '../support/thrown.ts'

interface Row {
  name: string
  parsed: QueueName
  pulsar: string
  exchange: string
  queue: { name: string; durable: boolean }
  kafka: string
  logical: string
}

/** docs/wire-contract.md#queue-names, one row per spelling; `svc` is the subscription name. */
const REQUEST: Row = {
  name: 'request:tg:joke',
  parsed: { cls: 'request', topicspace: 'tg', topic: 'joke', persistent: false },
  pulsar: 'non-persistent://tg/request/joke',
  exchange: 'tg.request.joke',
  queue: { name: 'tg.request.joke.svc', durable: false },
  kafka: 'tg.request.joke',
  logical: 'request:tg:joke',
}
const RESPONSE: Row = {
  name: 'response:tg:joke',
  parsed: { cls: 'response', topicspace: 'tg', topic: 'joke', persistent: false },
  pulsar: 'non-persistent://tg/response/joke',
  exchange: 'tg.response.joke',
  queue: { name: 'tg.response.joke.svc', durable: false },
  kafka: 'tg.response.joke',
  logical: 'response:tg:joke',
}
const FLOW: Row = {
  name: 'flow:tg:x',
  parsed: { cls: 'flow', topicspace: 'tg', topic: 'x', persistent: true },
  pulsar: 'persistent://tg/flow/x',
  exchange: 'tg.flow.x',
  queue: { name: 'tg.flow.x.svc', durable: true },
  kafka: 'tg.flow.x',
  logical: 'flow:tg:x',
}
const NOTIFY: Row = {
  name: 'notify:tg:y',
  parsed: { cls: 'notify', topicspace: 'tg', topic: 'y', persistent: false },
  pulsar: 'non-persistent://tg/notify/y',
  exchange: 'tg.notify.y',
  queue: { name: 'tg.notify.y.svc', durable: false },
  kafka: 'tg.notify.y',
  logical: 'notify:tg:y',
}
const ROWS: Row[] = [
  REQUEST,
  RESPONSE,
  FLOW,
  NOTIFY,
  // A Pulsar URI names the same queue as its logical name: the same addresses everywhere.
  { ...REQUEST, name: 'non-persistent://tg/request/joke' },
  { ...FLOW, name: 'persistent://tg/flow/x' },
]

const addresses = (name: string) => {
  const q = parseQueueName(name)
  return {
    pulsar: pulsarTopic(q),
    exchange: rabbitExchange(q),
    queue: rabbitQueue(q, 'svc'),
    kafka: kafkaTopic(q),
    logical: logicalName(q),
  }
}

describe('queue names', () => {
  for (const row of ROWS) {
    describe(row.name, () => {
      it('parses to class, topicspace, topic and persistence', () => {
        expect(parseQueueName(row.name)).toStrictEqual(row.parsed)
      })

      it(`becomes Pulsar topic ${row.pulsar}`, () => {
        expect(pulsarTopic(parseQueueName(row.name))).toBe(row.pulsar)
      })

      it(`becomes RabbitMQ fanout exchange ${row.exchange}`, () => {
        expect(rabbitExchange(parseQueueName(row.name))).toBe(row.exchange)
      })

      it(`becomes RabbitMQ queue ${row.queue.name} (durable: ${row.queue.durable})`, () => {
        expect(rabbitQueue(parseQueueName(row.name), 'svc')).toStrictEqual(row.queue)
      })

      it(`becomes Kafka topic ${row.kafka}`, () => {
        expect(kafkaTopic(parseQueueName(row.name))).toBe(row.kafka)
      })

      it(`has logical name ${row.logical}`, () => {
        expect(logicalName(parseQueueName(row.name))).toBe(row.logical)
      })
    })
  }

  it('maps both spellings of the request queue to identical addresses on every backend', () => {
    expect(addresses('non-persistent://tg/request/joke')).toStrictEqual(addresses('request:tg:joke'))
  })

  it('maps both spellings of the response queue to identical addresses on every backend', () => {
    expect(addresses('non-persistent://tg/response/joke')).toStrictEqual(addresses('response:tg:joke'))
  })

  it('maps both spellings of a flow queue to identical addresses on every backend', () => {
    expect(addresses('persistent://tg/flow/x')).toStrictEqual(addresses('flow:tg:x'))
  })

  it('round-trips a logical name through its Pulsar URI', () => {
    for (const row of ROWS) {
      expect(logicalName(parseQueueName(pulsarTopic(parseQueueName(row.name))))).toBe(row.logical)
    }
  })

  it('names the RabbitMQ queue after the subscription', () => {
    expect(rabbitQueue(parseQueueName('request:tg:joke'), 'joke-service')).toStrictEqual({
      name: 'tg.request.joke.joke-service',
      durable: false,
    })
  })

  it('accepts dots, underscores and dashes in every part', () => {
    expect(parseQueueName('request:my_space.v-1:joke_2.x-y')).toStrictEqual({
      cls: 'request',
      topicspace: 'my_space.v-1',
      topic: 'joke_2.x-y',
      persistent: false,
    })
  })
})

describe('defaultQueues', () => {
  it('generates logical names by default', () => {
    expect(defaultQueues('joke')).toStrictEqual({ request: 'request:tg:joke', response: 'response:tg:joke' })
  })

  it('generates logical names with style logical', () => {
    expect(defaultQueues('joke', 'logical')).toStrictEqual({
      request: 'request:tg:joke',
      response: 'response:tg:joke',
    })
  })

  it('generates non-persistent Pulsar URIs with style pulsar', () => {
    expect(defaultQueues('joke', 'pulsar')).toStrictEqual({
      request: 'non-persistent://tg/request/joke',
      response: 'non-persistent://tg/response/joke',
    })
  })

  it('generates names that parse back to the same addresses in both styles', () => {
    const logical = defaultQueues('story')
    const pulsar = defaultQueues('story', 'pulsar')
    expect(addresses(pulsar.request)).toStrictEqual(addresses(logical.request))
    expect(addresses(pulsar.response)).toStrictEqual(addresses(logical.response))
  })
})

describe('bad queue names', () => {
  const refuses = (name: string, message: string) => {
    const thrown = thrownBy(() => parseQueueName(name))
    expect(thrown).toBeInstanceOf(QueueNameError)
    expect((thrown as Error).name).toBe('QueueNameError')
    expect((thrown as Error).message).toBe(message)
  }

  /** The refusal of a name that is neither spelling. */
  const neither = (name: string) =>
    `queue "${name}" is neither a Pulsar URI (non-persistent://tg/request/joke) nor class:topicspace:topic (request:tg:joke)`
  /** The refusal of a name whose `part` is `value`, with a character it may not hold. */
  const mayOnly = (name: string, part: string, value: string) =>
    `queue "${name}": ${part} "${value}" may only contain letters, digits, ".", "_" and "-"`

  it.each([
    ['refuses a bare topic', 'joke', neither('joke')],
    [
      'refuses an unknown class',
      'bad:tg:joke',
      'queue "bad:tg:joke": class "bad" must be one of flow, request, response, notify',
    ],
    ['refuses a slash in the topic', 'request:tg:jo/ke', mayOnly('request:tg:jo/ke', 'topic', 'jo/ke')],
    ['refuses a name with only two parts', 'request:tg', neither('request:tg')],
    ['refuses a name with four parts', 'request:tg:joke:x', neither('request:tg:joke:x')],
    ['refuses an empty topicspace', 'request::joke', mayOnly('request::joke', 'topicspace', '')],
    [
      'refuses a slash in the topic of a Pulsar URI',
      'non-persistent://tg/request/jo/ke',
      mayOnly('non-persistent://tg/request/jo/ke', 'topic', 'jo/ke'),
    ],
    ['refuses a Pulsar URI without a topic', 'non-persistent://tg/request', neither('non-persistent://tg/request')],
  ])('%s', (_title, name, message) => {
    refuses(name, message)
  })

  it('names the part of a Pulsar URI that is wrong: the tenant or the namespace', () => {
    refuses('non-persistent://t g/request/joke', mayOnly('non-persistent://t g/request/joke', 'tenant', 't g'))
    refuses('persistent://tg/re quest/joke', mayOnly('persistent://tg/re quest/joke', 'namespace', 're quest'))
  })

  it('refuses a Pulsar URI with anything before its scheme or after its topic', () => {
    refuses('x-non-persistent://tg/request/joke', neither('x-non-persistent://tg/request/joke'))
    refuses('non-persistent://tg/request/joke\nmore', neither('non-persistent://tg/request/joke\nmore'))
  })
})
