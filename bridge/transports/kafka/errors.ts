/**
 * @platformatic/kafka's errors in words a bridge operator can act on. Its
 * errors nest (a MultipleErrors holding a ResponseError holding the broker's
 * error code), and the outer message alone ("Producing messages failed.")
 * says nothing.
 */
import { findErrorBy } from '@platformatic/kafka'

/** The nested messages and broker error codes of an error, outermost first, without repeats. */
export function describeKafkaError(err: unknown): string {
  const parts: string[] = []
  const walk = (e: unknown, depth: number) => {
    if (depth > 6 || !(e instanceof Error)) {
      if (!(e instanceof Error) && e !== undefined && depth === 0) parts.push(String(e))
      return
    }
    const apiId = (e as { apiId?: unknown }).apiId
    const text = typeof apiId === 'string' ? `${apiId}: ${e.message}` : e.message
    if (text && !parts.includes(text)) parts.push(text.replace(/\.$/, ''))
    for (const inner of (e as { errors?: unknown[] }).errors ?? []) walk(inner, depth + 1)
    if (e.cause !== undefined) walk(e.cause, depth + 1)
  }
  walk(err, 0)
  return parts.join(': ') || 'unknown error'
}

/** Whether the broker refused a record for its size (the broker's `message.max.bytes`, or the topic's `max.message.bytes`). */
export function isTooLarge(err: unknown): boolean {
  const error = err instanceof Error ? err : undefined
  return (
    findErrorBy(error, 'apiId', 'MESSAGE_TOO_LARGE') !== null ||
    findErrorBy(error, 'apiId', 'RECORD_LIST_TOO_LARGE') !== null
  )
}

/** A refused login or certificate: trying again cannot help. */
export function isRefusal(err: unknown): boolean {
  const error = err instanceof Error ? err : undefined
  if (findErrorBy(error, 'code', 'PLT_KFK_AUTHENTICATION') !== null) return true
  if (findErrorBy(error, 'apiId', 'SASL_AUTHENTICATION_FAILED') !== null) return true
  if (findErrorBy(error, 'apiId', 'UNSUPPORTED_SASL_MECHANISM') !== null) return true
  if (findErrorBy(error, 'apiId', 'CLUSTER_AUTHORIZATION_FAILED') !== null) return true
  if (findErrorBy(error, 'apiId', 'TOPIC_AUTHORIZATION_FAILED') !== null) return true
  if (findErrorBy(error, 'apiId', 'GROUP_AUTHORIZATION_FAILED') !== null) return true
  return /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(
    describeKafkaError(err) + ((err as NodeJS.ErrnoException)?.code ?? ''),
  )
}

/** The metadata of a topic that does not exist. */
export const isUnknownTopic = (err: unknown): boolean => err instanceof Error && /^Unknown topic /.test(err.message)

export const isTopicAlreadyThere = (err: unknown): boolean =>
  findErrorBy(err instanceof Error ? err : undefined, 'apiId', 'TOPIC_ALREADY_EXISTS') !== null
