/**
 * Answered once: a bounded memory of the answers this bridge published,
 * so that a request redelivered after its answer went out (the ack lost with
 * a connection, a Kafka rebalance before the commit) gets the same messages
 * again instead of a second run of the function.
 *
 * A request is known by its `id` property and a SHA-256 of its body: a
 * duplicate id with a different body is a different request and runs. A
 * request without an id is never remembered (nobody could match the answer).
 * The memory is this process's: a redelivery to another replica, or after a
 * restart, runs again (README, "Delivery guarantees").
 */
import { hash } from 'node:crypto'
import { BoundedMemory, type BoundedMemoryLimits } from '../support/bounded-memory.ts'

/** The answer's messages as published, in order (the last one carries `end_of_stream`). */
export type AnswerMessages = readonly Uint8Array[]

export interface AnsweredOnce {
  /** The key of a request, undefined when it has no id to be known by. */
  keyOf(id: string | undefined, body: Uint8Array): string | undefined
  recall(key: string, now: number): AnswerMessages | undefined
  remember(key: string, messages: AnswerMessages, now: number): void
}

export function createAnsweredOnce(limits: BoundedMemoryLimits): AnsweredOnce {
  const memory = new BoundedMemory<AnswerMessages>(limits)
  return {
    keyOf(id, body) {
      if (id === undefined || id === '') return undefined
      // One-shot: about a third cheaper than createHash().update().digest() for a request's body.
      return `${id}\n${hash('sha256', body, 'base64')}`
    },
    recall: (key, now) => memory.get(key, now),
    remember(key, messages, now) {
      const bytes = messages.reduce((sum, message) => sum + message.byteLength, key.length)
      memory.set(key, messages, now, bytes)
    },
  }
}
