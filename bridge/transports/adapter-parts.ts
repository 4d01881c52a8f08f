/**
 * What every broker adapter does where the broker's client meets the bridge,
 * written once: keeping secrets out of error texts and logs, the error a
 * closed transport gives, handing a body to a client library without a copy,
 * and building a `Delivery` that settles once and a handler call that cannot
 * throw into the client library.
 */
import { messageOf, ToolbridgeError } from '../../shared/errors.ts'
import type { Logger } from '../support/logger.ts'
import type { Delivery, OnDelivery, Properties } from './transport.ts'

export { redact } from './redact.ts'

/**
 * An error's text without `secret` (a password or token), should a client
 * library or the broker ever put it there. `describe` renders the error
 * (default: its message).
 */
export function scrubber(
  secret: string | undefined,
  describe: (err: unknown) => string = messageOf,
): (err: unknown) => string {
  if (!secret) return describe
  return (err) => describe(err).split(secret).join('***')
}

/** What a call on a closed transport fails with. */
export const closedError = (broker: string, address: string): ToolbridgeError =>
  new ToolbridgeError('unavailable', `${broker} transport for ${address} is closed`)

/** The body as a Buffer over the same bytes, for client libraries that take Buffers (no copy). */
export const asBuffer = (body: Uint8Array): Buffer =>
  Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength)

/**
 * A delivery whose ack or nack reaches `settle` once at most (`true` for an
 * ack): a second ack would make RabbitMQ close the channel and Kafka commit
 * twice, so later calls do nothing.
 */
export function deliveryOf(
  message: { body: Uint8Array; properties: Properties; redelivered: boolean; timestamp?: number | undefined },
  settle: (ack: boolean) => void,
): Delivery {
  let settled = false
  const once = (ack: boolean) => {
    if (settled) return
    settled = true
    settle(ack)
  }
  return {
    body: message.body,
    properties: message.properties,
    redelivered: message.redelivered,
    timestamp: message.timestamp,
    ack: () => once(true),
    nack: () => once(false),
  }
}

/** Hands a delivery to the bridge; a handler that throws is logged, never let loose in the client library's event loop. */
export function handOver(
  onDelivery: OnDelivery,
  delivery: Delivery,
  logger: Logger,
  fields: Record<string, unknown>,
  message = 'delivery handler threw',
): void {
  try {
    onDelivery(delivery)
  } catch (err) {
    logger.error({ ...fields, err: messageOf(err) }, message)
  }
}
