/**
 * A streamed answer on /tools/<tool>, written as newline-delimited JSON at
 * the pace the client reads it. The broker cannot be paused per caller, so
 * chunks that arrive while the socket is full wait here, as the strings the
 * request client already holds (no second copy), and go out together at
 * the next `drain`. Past MAX_UNSENT_CHARS waiting the client is not keeping
 * up and the answer is abandoned: the connection is closed, and the call's
 * later chunks are dropped as they arrive. The bound leaves room for a
 * burst (a function that yields without awaiting can deliver megabytes in
 * one turn of the event loop) that a reading client would still take.
 */
import type { ServerResponse } from 'node:http'

/** Characters of chunks that may wait for a slow client before its answer is abandoned. */
export const MAX_UNSENT_CHARS = 64 * 1024 * 1024

const line = (value: unknown) => JSON.stringify(value) + '\n'

export class NdjsonAnswer {
  private readonly res: ServerResponse
  private readonly onAbandon: () => void
  private unsent: string[] = []
  private unsentChars = 0
  private waiting = false
  private finalLine: string | undefined
  private abandoned = false

  /** `onAbandon`: the client could not keep up and the connection was closed. */
  constructor(res: ServerResponse, onAbandon: () => void) {
    this.res = res
    this.onAbandon = onAbandon
  }

  chunk(text: string): void {
    if (this.abandoned) return
    this.start()
    if (!this.waiting) return this.write(line({ chunk: text }))
    this.unsent.push(text)
    this.unsentChars += text.length
    if (this.unsentChars > MAX_UNSENT_CHARS) this.abandon()
  }

  /** The last line (`{"response"}` or `{"error"}`), after any chunks still waiting. */
  end(value: unknown): void {
    if (this.abandoned) return
    this.start()
    this.finalLine = line(value)
    if (!this.waiting) this.res.end(this.finalLine)
  }

  private start(): void {
    if (!this.res.headersSent)
      this.res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' })
  }

  private write(text: string): void {
    if (this.res.write(text)) return
    this.waiting = true
    this.res.once('drain', this.flush)
  }

  private readonly flush = (): void => {
    this.waiting = false
    if (this.abandoned) return
    const batch = this.unsent
    this.unsent = []
    this.unsentChars = 0
    const lines = batch.map((text) => line({ chunk: text })).join('')
    if (this.finalLine !== undefined) this.res.end(lines + this.finalLine)
    else if (lines !== '') this.write(lines)
  }

  private abandon(): void {
    this.abandoned = true
    this.unsent = []
    this.unsentChars = 0
    this.res.destroy()
    this.onAbandon()
  }
}
