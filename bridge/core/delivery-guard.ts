/**
 * What the bridge does about delivery beyond acking after the answer, per
 * service: requests claimed and answers remembered for copies of them
 * (answered-store.ts), requests
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
import { type AnswerMessages, requestKey } from '../stores/answered-once.ts'
import { type AnsweredStores, type Lease, REPLAY_PROPERTY } from '../stores/answered-store.ts'
import { memoryAnsweredStores } from '../stores/memory-answered-store.ts'
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

/** What the answered-once store said of a request. */
export interface Claimed {
  /** The answer already published for this request, to publish again instead of invoking. */
  remembered?: AnswerMessages
  /** Set when the store could not say and the service refuses to run unless it can. */
  refused?: Refusal
  /** Why the store could not say (worth a log line and a metric), when it could not. */
  trouble?: string
}

export interface Ticket {
  /** Set when the request is too old to invoke. */
  readonly expired: Refusal | undefined
  /** Why the broker's timestamp was not believed, if it was not (worth a log line). */
  readonly distrusted: string | undefined
  /** How long the request waited since the broker took it; undefined without a believable broker timestamp. */
  readonly queuedMs: number | undefined
  /**
   * Claims the request before it runs: resolves with the answer kept for it (waiting while a copy
   * of it runs), or nothing once it is this delivery's to run. Called once per ticket.
   */
  claim(): Promise<Claimed>
  /** Notes one message published as this request's answer, while the answer is small enough to keep. */
  record(message: Uint8Array): void
  /**
   * Keeps the answer recorded (nothing when the service is idempotent or the answer too large) and
   * ends the claim; resolves with why the store could not keep it, if it could not.
   */
  remember(): Promise<string | undefined>
  /** Ends the claim without an answer (the request handed back): a copy of it may run. */
  release(): void
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
  stores: AnsweredStores = memoryAnsweredStores,
  now: () => number = Date.now,
): DeliveryGuard {
  const own = spec.delivery ?? {}
  const maxAgeMs = own.maxAgeSeconds === undefined ? defaults.maxAgeMs : own.maxAgeSeconds * 1000
  const ttlMs =
    own.answeredMemoryTtlSeconds === undefined ? defaults.answeredMemoryTtlMs : own.answeredMemoryTtlSeconds * 1000
  const store = own.idempotent
    ? undefined
    : stores.forService(
        spec.id,
        {
          maxEntries: own.answeredMemorySize ?? defaults.answeredMemorySize,
          ttlMs,
          maxWeight: ANSWERED_MEMORY_MAX_BYTES,
        },
        now,
      )
  const refuseWhenDown = own.answeredStoreWhenDown === 'refuse'
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
      const key = requestKey(delivery.properties[ID_PROPERTY], delivery.body)
      const seen = (key === undefined ? undefined : sightings.get(key, at)) ?? { firstSeen: at, attempts: 0 }
      seen.attempts++
      if (key !== undefined) sightings.set(key, seen, seen.firstSeen)
      const judged = judgeAge(delivery.timestamp, seen.firstSeen, at)
      let recorded: Uint8Array[] | undefined
      let recordedBytes = 0
      let lease: Lease | undefined
      return {
        expired: expiry(judged, maxAgeMs),
        distrusted: judged.distrusted,
        queuedMs: judged.from === 'broker' ? judged.ageMs : undefined,
        async claim() {
          if (key === undefined || store === undefined) return {}
          const claim = await store.claim(key, delivery.properties[REPLAY_PROPERTY] || undefined)
          if (claim.kind === 'answered') return { remembered: claim.messages }
          if (claim.kind === 'claimed') {
            lease = claim.lease
            recorded = []
            return {}
          }
          const trouble = `the answered-once store could not say whether this request was answered: ${claim.reason}`
          if (!refuseWhenDown) return { trouble }
          const message = `${trouble}; not run, so that it cannot run twice (answeredStore.whenDown: refuse)`
          return { trouble, refused: { ok: false, kind: 'unavailable', message } }
        },
        record(message) {
          if (recorded === undefined) return
          recordedBytes += message.byteLength
          if (recordedBytes > REMEMBERED_ANSWER_MAX_BYTES) recorded = undefined
          else recorded.push(message)
        },
        async remember() {
          const held = lease
          lease = undefined
          if (held === undefined) return undefined
          if (recorded === undefined) {
            held.release()
            return undefined
          }
          try {
            await held.complete(recorded)
            return undefined
          } catch (err) {
            return `the answered-once store could not keep the answer: ${(err as Error).message}`
          }
        },
        release() {
          lease?.release()
          lease = undefined
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
