/**
 * What a 2025-era MCP session's SSE streams sent, kept for a while so that a
 * client whose connection dropped can resume a stream with `Last-Event-ID`
 * (Streamable HTTP's resumability). One log for every session, bounded as a
 * whole: by count, by bytes and by age (the replay window); the oldest
 * events go first. A session sees only its own events: an event id of
 * another session's stream is unknown to it, as is one already dropped.
 */
import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server'

export interface ReplayLimits {
  /** Events kept across all sessions. */
  maxEvents: number
  /** Bytes of JSON kept across all sessions. */
  maxBytes: number
  /** How long an event can be replayed after it was sent. */
  windowMs: number
}

interface Entry {
  session: string
  streamId: string
  message: JSONRPCMessage
  bytes: number
  at: number
}

export class ReplayLog {
  /** In the order stored: a Map iterates in insertion order, so the oldest comes first. */
  private readonly entries = new Map<string, Entry>()
  private bytes = 0
  private next = 0

  private readonly limits: ReplayLimits
  private readonly now: () => number

  constructor(limits: ReplayLimits, now: () => number = Date.now) {
    this.limits = limits
    this.now = now
  }

  get size(): number {
    return this.entries.size
  }

  /** The event store of one session: it stores into this log and replays only its own events. */
  storeFor(session: string, onStored: () => void = () => {}): EventStore {
    return {
      storeEvent: async (streamId, message) => {
        onStored()
        return this.add(session, streamId, message)
      },
      getStreamIdForEventId: async (eventId) => this.find(session, eventId)?.streamId,
      replayEventsAfter: async (lastEventId, { send }) => {
        const last = this.find(session, lastEventId)
        if (last === undefined)
          throw new Error(`event "${lastEventId.slice(0, 100)}" is not one this session can replay`)
        let after = false
        for (const [id, entry] of this.entries) {
          if (id === lastEventId) after = true
          // The priming event ({}) marks where a stream starts; it carries nothing to replay.
          else if (after && entry.session === session && entry.streamId === last.streamId && 'jsonrpc' in entry.message)
            await send(id, entry.message)
        }
        return last.streamId
      },
    }
  }

  /** Drops a session's events (it ended). */
  forget(session: string): void {
    for (const [id, entry] of this.entries) if (entry.session === session) this.remove(id, entry)
  }

  private add(session: string, streamId: string, message: JSONRPCMessage): string {
    const id = String(++this.next)
    const bytes = JSON.stringify(message).length
    this.entries.set(id, { session, streamId, message, bytes, at: this.now() })
    this.bytes += bytes
    this.prune()
    return id
  }

  private find(session: string, eventId: string): Entry | undefined {
    this.prune()
    const entry = this.entries.get(eventId)
    return entry?.session === session ? entry : undefined
  }

  private prune(): void {
    const oldest = this.now() - this.limits.windowMs
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.limits.maxEvents && this.bytes <= this.limits.maxBytes && entry.at >= oldest) break
      this.remove(id, entry)
    }
  }

  private remove(id: string, entry: Entry): void {
    this.entries.delete(id)
    this.bytes -= entry.bytes
  }
}
