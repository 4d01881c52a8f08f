/** Picks a transport by the broker URL's scheme; none means the embedded broker. */
import { ConfigError } from '../../shared/descriptors.ts'
import type { Logger } from '../logger.ts'
import { MemoryBroker, MemoryTransport } from './memory.ts'
import { RabbitTransport } from './rabbitmq.ts'
import { redact } from './redact.ts'
import type { Transport } from './transport.ts'


export function createTransport(
  broker: string | undefined,
  memory: MemoryBroker = new MemoryBroker(),
  options: { logger?: Logger } = {},
): Transport {
  if (broker === undefined || broker === 'memory://' || broker === 'memory:') return new MemoryTransport(memory)
  let url: URL
  try {
    url = new URL(broker)
  } catch {
    throw new ConfigError('--broker', `"${redact(broker)}" is not a URL (e.g. amqp://guest:guest@127.0.0.1:5672/)`)
  }
  if (url.protocol === 'amqp:' || url.protocol === 'amqps:') return new RabbitTransport(broker, options)
  throw new ConfigError('--broker', `unsupported scheme "${url.protocol}": use memory://, amqp:// or amqps://`)
}
