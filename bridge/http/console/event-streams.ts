/**
 * The console's server-sent event streams (GET /console/api/events), held
 * to a bound: at most `maxStreams` open at once (a console tab holds one),
 * each event serialised once for all of them, and a stream whose reader has
 * fallen `maxBufferedBytes` behind told so in a last event and closed, so
 * that a reader that never reads holds neither memory nor the event loop.
 */
import type { ServerResponse } from 'node:http'
import type { RequestLog } from './request-log.ts'

/** What the streams show: the console feed's log and code status (console-feed.ts, which holds the streams). */
export interface StreamedFeed {
  readonly log: Pick<RequestLog, 'entries' | 'subscribe'>
  readonly status: unknown
  onStatus(listener: (status: unknown) => void): () => void
}

/** Far more than the console tabs a person opens, far fewer than the gateway's connection cap. */
export const MAX_EVENT_STREAMS = 64
/** About 2,000 request events: a reader this far behind is not reading. */
export const MAX_BUFFERED_BYTES = 1024 * 1024
/** Keeps proxies and idle timers from closing a quiet event stream. */
const HEARTBEAT_MS = 15_000

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

export class EventStreams {
  private readonly streams = new Set<ServerResponse>()
  private readonly maxStreams: number
  private readonly maxBufferedBytes: number
  private stopFeed: (() => void) | undefined
  private heartbeat: NodeJS.Timeout | undefined
  private readonly feed: StreamedFeed

  constructor(feed: StreamedFeed, limits: { maxStreams?: number; maxBufferedBytes?: number } = {}) {
    this.feed = feed
    this.maxStreams = limits.maxStreams ?? MAX_EVENT_STREAMS
    this.maxBufferedBytes = limits.maxBufferedBytes ?? MAX_BUFFERED_BYTES
  }

  /** Streams open now. */
  get size(): number {
    return this.streams.size
  }

  /** Opens a stream on `res`, the log after `after` first; false when `maxStreams` are open (nothing written). */
  open(res: ServerResponse, after: number): boolean {
    if (this.streams.size >= this.maxStreams) return false
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' })
    this.streams.add(res)
    res.once('close', () => this.close(res))
    let backlog = ''
    for (const entry of this.feed.log.entries({}, after)) backlog += frame('request', entry)
    if (this.feed.status) backlog += frame('status', this.feed.status)
    if (backlog) this.write(res, backlog)
    this.listen()
    return true
  }

  /** Ends every stream (the gateway is stopping). */
  closeAll(): void {
    for (const res of [...this.streams]) res.end()
  }

  private listen(): void {
    if (this.stopFeed) return
    const stopLog = this.feed.log.subscribe((entry) => this.broadcast(frame('request', entry)))
    const stopStatus = this.feed.onStatus((status) => this.broadcast(frame('status', status)))
    this.stopFeed = () => {
      stopLog()
      stopStatus()
    }
    this.heartbeat = setInterval(() => this.broadcast(': heartbeat\n\n'), HEARTBEAT_MS)
    this.heartbeat.unref()
  }

  private broadcast(text: string): void {
    for (const res of this.streams) this.write(res, text)
  }

  private write(res: ServerResponse, text: string): void {
    if (res.writableLength + text.length <= this.maxBufferedBytes) {
      res.write(text)
      return
    }
    const message =
      `this stream fell ${res.writableLength} bytes behind and was closed; ` +
      'the console page reconnects from where it stopped'
    res.end(frame('dropped', { message }))
    this.close(res)
  }

  private close(res: ServerResponse): void {
    if (!this.streams.delete(res) || this.streams.size > 0) return
    this.stopFeed?.()
    this.stopFeed = undefined
    clearInterval(this.heartbeat)
  }
}
