/**
 * Answered once: a bounded memory of the answers this bridge published,
 * so that a request redelivered after its answer went out (the ack lost with
 * a connection, a Kafka rebalance before the commit) gets the same messages
 * again instead of a second run of the function.
 *
 * A request is known by a SHA-256 of its `id` property and its body: a
 * duplicate id with a different body is a different request and runs. A
 * request without an id is never remembered (nobody could match the answer).
 * The memory is this process's: a redelivery to another replica, or after a
 * restart, runs again unless the bridge shares a store (answered-store.ts).
 */
import { createHash } from 'node:crypto'
import { BoundedMemory, type BoundedMemoryLimits } from '../support/bounded-memory.ts'

/** The answer's messages as published, in order (the last one carries `end_of_stream`). */
export type AnswerMessages = readonly Uint8Array[]

/** An answer kept, and the replay it answered (undefined: the request as first sent). */
export interface Remembered {
  messages: AnswerMessages
  replay: string | undefined
}

export interface AnsweredOnce {
  recall(key: string, now: number): Remembered | undefined
  remember(key: string, answer: Remembered, now: number): void
}

/**
 * The key of a request, undefined when it has no id to be known by: one digest of the id and the
 * body, a flat string of 44 characters. A key that held the id itself held the id's string as it
 * was built: a request client's randomUUID() is a tree of some twenty joined pieces, and such keys
 * cost 550 bytes more per request remembered (measured). The id goes in as UTF-16, lossless for any
 * string, after its length, so that no id and body can pass for another.
 */
export function requestKey(id: string | undefined, body: Uint8Array): string | undefined {
  if (id === undefined || id === '') return undefined
  return createHash('sha256').update(`${id.length}:`).update(id, 'utf16le').update(body).digest('base64')
}

/**
 * Answers are kept as latin1 text, one character per byte (lossless for any
 * bytes), on the JavaScript heap. A small Buffer as published is a view into
 * an 8 KiB slab shared with other allocations, and keeping one for the TTL
 * keeps its whole slab alive: the soak's RSS grew about twice as fast. A copy
 * in a Buffer of its own costs an allocation outside the heap per answer,
 * which made the collector run more often (about 20 us CPU a request,
 * measured); a string costs neither.
 */
interface KeptAnswer {
  texts: readonly string[]
  replay: string | undefined
}

export function createAnsweredOnce(limits: BoundedMemoryLimits): AnsweredOnce {
  const memory = new BoundedMemory<KeptAnswer>(limits)
  return {
    recall(key, now) {
      const kept = memory.get(key, now)
      if (kept === undefined) return undefined
      return { messages: kept.texts.map((text) => Buffer.from(text, 'latin1')), replay: kept.replay }
    },
    remember(key, { messages, replay }, now) {
      const bytes = messages.reduce((sum, message) => sum + message.byteLength, key.length + (replay?.length ?? 0))
      const texts = messages.map((message) =>
        Buffer.from(message.buffer, message.byteOffset, message.byteLength).toString('latin1'),
      )
      memory.set(key, { texts, replay }, now, bytes)
    },
  }
}
