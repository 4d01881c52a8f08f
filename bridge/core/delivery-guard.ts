/**
 * What the bridge does about delivery beyond acking after the answer, per
 * service: answers remembered for redeliveries (answered-once.ts), requests
 * too old to invoke (request-age.ts), and the dead-letter queue
 * (dead-letters.ts). The bridge asks it about each delivery once, when the
 * delivery arrives, and gets a ticket for that delivery.
 */
import { randomUUID } from 'node:crypto'
import type { ErrorKind, Refusal } from '../../shared/errors.ts'
import { ID_PROPERTY } from '../../shared/protocol.ts'
import type { DeliveryDefaults } from '../project/settings.ts'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import { BoundedMemory } from '../support/bounded-memory.ts'
import type { Delivery, Properties } from '../transports/transport.ts'
import { type AnswerMessages, createAnsweredOnce } from './answered-once.ts'
import { deadLetterMessage } from './dead-letters.ts'
import { expiry, judgeAge } from './request-age.ts'

/** Bytes of answers one service remembers at most, whatever its `answeredMemory.size`. */
export const ANSWERED_MEMORY_MAX_BYTES = 64 * 1024 * 1024
/**
 * An answer larger than this is not kept (redelivered, it runs again): each request in flight holds
 * its answer while it streams, and a stream may never end.
 */
export const REMEMBERED_ANSWER_MAX_BYTES = 4 * 1024 * 1024
/** Requests whose first sighting (for the age of those without a broker timestamp) and attempts are remembered. */
const SIGHTINGS = 10_000

/** The subscription that keeps a dead-letter queue's messages until `toolbridge dead-letters` reads them. */
export const DEAD_LETTER_SUBSCRIPTION = 'toolbridge-dead-letters'

export type PublishTo = (queue: string, body: Uint8Array, properties: Properties) => Promise<void>

export interface Ticket {
  /** The answer already published for this request, to publish again instead of invoking. */
  readonly remembered: AnswerMessages | undefined
  /** Set when the request is too old to invoke. */
  readonly expired: Refusal | undefined
  /** Why the broker's timestamp was not believed, if it was not (worth a log line). */
  readonly distrusted: string | undefined
  /** How long the request waited since the broker took it; undefined without a believable broker timestamp. */
  readonly queuedMs: number | undefined
  /** Notes one message published as this request's answer, while the answer is small enough to keep. */
  record(message: Uint8Array): void
  /** Keeps the answer recorded (nothing when the service is idempotent or the answer too large). */
  remember(): void
  /** Whether an error answer of this kind is also copied to the dead-letter queue. */
  keeps(kind: ErrorKind): boolean
  /** Writes the request to the dead-letter queue; false when the service has none. Rejects when it cannot be written. */
  deadLetter(reason: { kind: ErrorKind; message: string }): Promise<boolean>
}

export interface DeliveryGuard {
  /** The dead-letter queue, if any. */
  readonly deadLetterQueue: string | undefined
  ticket(delivery: Delivery): Ticket
}

export function createDeliveryGuard(
  spec: ToolServiceSpec,
  defaults: DeliveryDefaults,
  publish: PublishTo,
  now: () => number = Date.now,
): DeliveryGuard {
  const own = spec.delivery ?? {}
  const maxAgeMs = own.maxAgeSeconds === undefined ? defaults.maxAgeMs : own.maxAgeSeconds * 1000
  const ttlMs =
    own.answeredMemoryTtlSeconds === undefined ? defaults.answeredMemoryTtlMs : own.answeredMemoryTtlSeconds * 1000
  const answered = createAnsweredOnce({
    maxEntries: own.idempotent ? 0 : (own.answeredMemorySize ?? defaults.answeredMemorySize),
    ttlMs,
    maxWeight: ANSWERED_MEMORY_MAX_BYTES,
  })
  const sightings = new BoundedMemory<{ firstSeen: number; attempts: number }>({
    maxEntries: SIGHTINGS,
    ttlMs: Math.max(maxAgeMs, ttlMs),
    maxWeight: 0,
  })
  const deadLetterQueue = own.deadLetterQueue ?? defaults.deadLetterQueue
  const kept = new Set(own.deadLetterKinds ?? [])

  return {
    deadLetterQueue,
    ticket(delivery) {
      const at = now()
      const key = answered.keyOf(delivery.properties[ID_PROPERTY], delivery.body)
      const remembered = key === undefined ? undefined : answered.recall(key, at)
      const seen = (key === undefined ? undefined : sightings.get(key, at)) ?? { firstSeen: at, attempts: 0 }
      seen.attempts++
      if (key !== undefined) sightings.set(key, seen, seen.firstSeen)
      const judged = judgeAge(delivery.timestamp, seen.firstSeen, at)
      let recorded: Uint8Array[] | undefined = key === undefined || own.idempotent ? undefined : []
      let recordedBytes = 0
      return {
        remembered,
        expired: expiry(judged, maxAgeMs),
        distrusted: judged.distrusted,
        queuedMs: judged.from === 'broker' ? judged.ageMs : undefined,
        record(message) {
          if (recorded === undefined) return
          recordedBytes += message.byteLength
          if (recordedBytes > REMEMBERED_ANSWER_MAX_BYTES) recorded = undefined
          else recorded.push(message)
        },
        remember() {
          if (key !== undefined && recorded !== undefined) answered.remember(key, recorded, now())
        },
        keeps: (kind) => kept.has(kind),
        async deadLetter(reason) {
          if (deadLetterQueue === undefined) return false
          const reasons = { ...reason, service: spec.id, queue: spec.requestQueue, attempts: seen.attempts }
          const letter = deadLetterMessage(delivery, reasons, randomUUID(), new Date(now()))
          await publish(deadLetterQueue, letter.body, letter.properties)
          return true
        },
      }
    },
  }
}
