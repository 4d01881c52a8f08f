import { ConfigError } from '../../shared/errors.ts'
import { parseQueueName, QueueNameError } from '../../shared/queues.ts'

/** A dead-letter queue must keep what it is given until someone reads it: a persistent queue. */
export function checkDeadLetterQueue(path: string, queue: string): string {
  let parsed: ReturnType<typeof parseQueueName>
  try {
    parsed = parseQueueName(queue)
  } catch (err) {
    if (err instanceof QueueNameError) throw new ConfigError(path, err.message)
    throw err
  }
  if (!parsed.persistent) {
    throw new ConfigError(
      path,
      `"${queue}" is not persistent: a dead-letter queue must keep its messages (a "flow:" queue or a persistent:// topic)`,
    )
  }
  return queue
}
