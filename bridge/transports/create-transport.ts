/**
 * Picks a transport by the broker URL's scheme; none means the embedded
 * broker. Each broker's client library is imported only when a URL of its
 * scheme is given: the Kafka client alone takes most of a second to load.
 */
import { ConfigError } from '../../shared/errors.ts'
import type { Logger } from '../support/logger.ts'
import { MemoryBroker, MemoryTransport } from './memory/memory-transport.ts'
import type { PulsarSettings } from './pulsar/pulsar-transport.ts'
import { redact } from './adapter-parts.ts'
import type { Transport } from './transport.ts'

export async function createTransport(
  broker: string | undefined,
  memory: MemoryBroker = new MemoryBroker(),
  options: {
    logger?: Logger
    onReconnect?: () => void
    pulsar?: PulsarSettings & { client?: 'builtin' | 'native' }
  } = {},
): Promise<Transport> {
  if (broker === undefined || broker === 'memory://' || broker === 'memory:') return new MemoryTransport(memory)
  // Before URL parsing: a list of bootstrap servers (kafka://a:9092,b:9092) is not a WHATWG URL.
  if (/^kafka:/.test(broker)) {
    const { KafkaTransport } = await import('./kafka/kafka-transport.ts')
    return new KafkaTransport(broker, options)
  }
  let url: URL
  try {
    url = new URL(broker)
  } catch {
    throw new ConfigError('--broker', `"${redact(broker)}" is not a URL (e.g. amqp://guest:guest@127.0.0.1:5672/)`)
  }
  if (url.protocol === 'amqp:' || url.protocol === 'amqps:') {
    const { RabbitTransport } = await import('./rabbitmq/rabbitmq-transport.ts')
    return new RabbitTransport(broker, options)
  }
  if (url.protocol === 'pulsar:' || url.protocol === 'pulsar+ssl:') {
    const pulsar = {
      logger: options.logger,
      onReconnect: options.onReconnect,
      token: options.pulsar?.token,
      listener: options.pulsar?.listener,
    }
    if (options.pulsar?.client === 'native') {
      const { NativePulsarTransport } = await import('./pulsar/native-transport.ts')
      return new NativePulsarTransport(broker, pulsar)
    }
    const { PulsarTransport } = await import('./pulsar/pulsar-transport.ts')
    return new PulsarTransport(broker, pulsar)
  }
  throw new ConfigError(
    '--broker',
    `unsupported scheme "${url.protocol}": use memory://, amqp://, amqps://, kafka://, pulsar:// or pulsar+ssl://`,
  )
}
