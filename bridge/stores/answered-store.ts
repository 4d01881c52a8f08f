/**
 * Where a service's answered-once records live, and the rule that keeps a
 * request from running twice: a request is claimed (marked in progress)
 * before its function is invoked, and the claim ends only once its answer is
 * kept. A copy of the request that arrives meanwhile (a client's retry, a
 * redelivery) waits for that answer instead of running; one that arrives
 * later gets the answer kept. A claim that ends without an answer (the
 * request handed back, an answer too large to keep) lets the next copy run.
 *
 * By default the records are this process's (memory-answered-store.ts);
 * `--answered-store redis://...` shares them between replicas
 * (redis-answered-store.ts), where a claim is a lease that
 * expires if its replica dies.
 *
 * A replayed dead letter carries a replay mark (REPLAY_PROPERTY): an answer
 * kept under another mark, or none, does not answer it, so a request replayed
 * after its function was fixed runs again, and its new answer replaces the old.
 */
import type { BoundedMemoryLimits } from '../support/bounded-memory.ts'
import type { AnswerMessages } from './answered-once.ts'

/** Set by `toolbridge dead-letters replay` to the dead letter's id. */
export const REPLAY_PROPERTY = 'toolbridge-replay'

export type Claim =
  /** Answered before: publish these messages again instead of invoking. */
  | { kind: 'answered'; messages: AnswerMessages }
  /** Nobody has answered it nor is running it: run it, then complete or release the lease. */
  | { kind: 'claimed'; lease: Lease }
  /** The store could not say (unreachable, slow, full, a record it cannot read): the service's `whenDown` decides. */
  | { kind: 'unknown'; reason: string }

export interface Lease {
  /** Keeps the answer and ends the claim; rejects when the store could not keep it (the claim still ends). */
  complete(messages: AnswerMessages): Promise<void>
  /** Ends the claim without an answer: a copy of the request may run. */
  release(): void
}

export interface AnsweredStore {
  /** Claims a request by its key; waits while someone else holds it. `replay`: the mark of a replayed dead letter. */
  claim(key: string, replay: string | undefined): Promise<Claim>
}

/** The answered-once store of each service; one per bridge. */
export interface AnsweredStores {
  forService(service: string, limits: BoundedMemoryLimits, now: () => number): AnsweredStore
  close(): Promise<void>
}

/** Whether an answer kept under `kept` answers a delivery marked `replay`. */
export const answers = (kept: string | undefined, replay: string | undefined): boolean =>
  replay === undefined || kept === replay
