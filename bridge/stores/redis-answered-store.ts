/**
 * The answered-once records in Redis (or Valkey), shared by every replica
 * given the same `--answered-store redis://...`. A request's record is one
 * string key, `toolbridge:answered:<service>:<request key>`, holding JSON:
 *
 *   {"v":1,"state":"running","owner":"<uuid>","replay":"..."}   the lease, for --answered-store-lease
 *   {"v":1,"state":"answered","replay":"...","messages":["<base64>",...]}   the answer, for the memory's TTL
 *
 * A claim is one `SET key <running> PX <lease> NX GET`: it either creates the
 * lease or returns the record there. The replica holding leases renews them
 * all every third of the lease while their functions run (one timer, one
 * pipeline), so only a replica that died lets a lease expire, and a copy
 * waiting elsewhere then claims it. Calls made in the same turn of the event
 * loop go to Redis in one write (ioredis's auto-pipelining). A record of a
 * newer format (`v`), or one that is not JSON, is not guessed at: the claim
 * says so, and the service's `answeredStore.whenDown` decides.
 *
 * Every call has a deadline (STORE_CALL_TIMEOUT_MS) and nothing queues while
 * Redis is unreachable, so an unreachable, slow or full store ends each claim
 * at once with the reason, instead of holding the request.
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { messageOf, ToolbridgeError } from '../../shared/errors.ts'
import type { BoundedMemoryLimits } from '../support/bounded-memory.ts'
import type { Logger } from '../support/logger.ts'
import type { AnswerMessages } from './answered-once.ts'
import { type AnsweredStore, type AnsweredStores, answers, type Claim } from './answered-store.ts'

/** The record format this version writes and reads. */
export const RECORD_FORMAT = 1
/** A call that has not answered by then fails: the request is not held up by a slow store. */
export const STORE_CALL_TIMEOUT_MS = 1000
/** How often a copy waiting for a lease held elsewhere looks again, at most. */
const MAX_POLL_MS = 250

type StoreRecord =
  | { v: number; state: 'running'; owner: string; replay?: string }
  | { v: number; state: 'answered'; replay?: string; messages: string[] }

/** Replaces the record only if it is still the one read: a replay taking over an answer. */
const SWAP = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0`
/** Extends a lease only while it is still this claim's. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`
/** Ends a lease only while it is still this claim's. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1]) end return 0`

export interface RedisStoreOptions {
  /** redis://[user:password@]host:port[/db] or rediss://... */
  url: string
  /** How long a claim holds a request if its replica stops renewing it (dies). */
  leaseMs: number
  logger: Logger
}

/** Where the store is, without credentials, for log lines and reasons. */
function whereOf(url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}`
  } catch {
    return 'the answered-once store'
  }
}

function readRecord(text: string): StoreRecord | string {
  let record: unknown
  try {
    record = JSON.parse(text)
  } catch {
    return 'its record there is not JSON'
  }
  const v = (record as { v?: unknown } | null)?.v
  if (typeof v !== 'number') return 'its record there has no format version'
  if (v > RECORD_FORMAT) {
    return `its record there is of format ${v}, written by a newer toolbridge (this one reads format ${RECORD_FORMAT})`
  }
  const state = (record as { state?: unknown }).state
  if (state !== 'running' && state !== 'answered') return `its record there has an unknown state "${String(state)}"`
  return record as StoreRecord
}

export async function createRedisAnsweredStores(options: RedisStoreOptions): Promise<AnsweredStores> {
  const { leaseMs, logger } = options
  const where = whereOf(options.url)
  const redis = new Redis(options.url, {
    lazyConnect: true,
    connectTimeout: STORE_CALL_TIMEOUT_MS,
    commandTimeout: STORE_CALL_TIMEOUT_MS,
    // Fail at once while disconnected, rather than queue calls and hold requests.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    enableAutoPipelining: true,
  })
  let reachable = false
  let everWarned = false
  redis.on('ready', () => {
    if (!reachable) logger.info({ store: where }, 'answered-once store reachable')
    reachable = true
  })
  redis.on('error', (err: Error) => {
    // Once per outage, not once per reconnection attempt.
    if (reachable || !everWarned) logger.error({ store: where, err: err.message }, 'answered-once store unreachable')
    everWarned = true
    reachable = false
  })
  try {
    await redis.connect()
  } catch (err) {
    // The bridge serves anyway: each request meets its service's whenDown until the store is back.
    logger.error({ store: where, err: messageOf(err) }, 'answered-once store unreachable at start')
  }

  /** Leases held now: key -> its running record, renewed together. */
  const held = new Map<string, string>()
  const renewal = setInterval(
    () => {
      if (held.size === 0) return
      const pipeline = redis.pipeline()
      for (const [name, running] of held) pipeline.eval(RENEW, 1, name, running, leaseMs)
      pipeline.exec().catch((err: unknown) => {
        logger.warn({ store: where, err: messageOf(err) }, 'could not renew leases on the answered-once store')
      })
    },
    Math.max(1, Math.floor(leaseMs / 3)),
  )
  renewal.unref()

  const unknown = (err: unknown): Claim => ({ kind: 'unknown', reason: `${where}: ${messageOf(err)}` })

  function forService(service: string, limits: BoundedMemoryLimits): AnsweredStore {
    const prefix = `toolbridge:answered:${service}:`
    return {
      async claim(key, replay) {
        const name = prefix + key
        for (let pollMs = 20; ; pollMs = Math.min(pollMs * 2, MAX_POLL_MS)) {
          const running = JSON.stringify({ v: RECORD_FORMAT, state: 'running', owner: randomUUID(), replay })
          let previous: unknown
          try {
            previous = await redis.call('SET', name, running, 'PX', leaseMs, 'NX', 'GET')
          } catch (err) {
            return unknown(err)
          }
          if (previous === null) return { kind: 'claimed', lease: leaseOf(name, running, replay, limits.ttlMs) }
          const record = readRecord(String(previous))
          if (typeof record === 'string') return { kind: 'unknown', reason: `${where}: ${record}` }
          if (record.state === 'answered') {
            if (answers(record.replay, replay)) {
              return { kind: 'answered', messages: record.messages.map((m) => Buffer.from(m, 'base64')) }
            }
            try {
              if ((await redis.eval(SWAP, 1, name, String(previous), running, leaseMs)) === 1) {
                return { kind: 'claimed', lease: leaseOf(name, running, replay, limits.ttlMs) }
              }
            } catch (err) {
              return unknown(err)
            }
            continue // the record changed meanwhile: read it again
          }
          // Running on a replica (this one or another): wait for its answer, or for its lease to end.
          await new Promise((resolve) => setTimeout(resolve, pollMs))
        }
      },
    }
  }

  function leaseOf(name: string, running: string, replay: string | undefined, ttlMs: number) {
    held.set(name, running)
    // Ended once: a second end, or a complete after a release, does nothing.
    const end = () => held.get(name) === running && held.delete(name)
    return {
      async complete(messages: AnswerMessages) {
        if (!end()) return
        const record = {
          v: RECORD_FORMAT,
          state: 'answered',
          replay,
          messages: messages.map((m) => Buffer.from(m.buffer, m.byteOffset, m.byteLength).toString('base64')),
        }
        try {
          await redis.set(name, JSON.stringify(record), 'PX', ttlMs)
        } catch (err) {
          throw new ToolbridgeError('unavailable', `${where}: ${messageOf(err)}`, { cause: err, retriable: true })
        }
      },
      release() {
        if (!end()) return
        redis.eval(RELEASE, 1, name, running).catch((err: unknown) => {
          // The lease then ends when it expires.
          logger.warn({ store: where, err: messageOf(err) }, 'could not end a lease on the answered-once store')
        })
      },
    }
  }

  return {
    forService,
    async close() {
      clearInterval(renewal)
      redis.disconnect()
    },
  }
}
