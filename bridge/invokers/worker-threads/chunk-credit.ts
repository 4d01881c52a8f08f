/**
 * Flow control for a stream's chunks from a worker thread to the main
 * thread. Without it a function that yields without awaiting posts messages
 * faster than the main thread takes them: the queue grows outside the V8
 * heap and the main thread's event loop spends every turn draining it.
 *
 * The worker may have CHUNK_WINDOW chunk messages the main thread has not
 * taken yet; the main thread answers each one it takes with a credit.
 * Without credit, chunks are held and joined into one message (cheaper than
 * many small ones); once HOLD_CHARS are held, the function waits for credit.
 */
export const CHUNK_WINDOW = 4
const HOLD_CHARS = 64 * 1024

/** The worker's side: one per worker, as credit belongs to the channel, not to an invocation. */
export class ChunkSender {
  private readonly post: (text: string) => void
  private credit = CHUNK_WINDOW
  /** Never non-empty while there is credit: a credit posts what is held at once. */
  private held: string[] = []
  private heldChars = 0
  private waiter: (() => void) | undefined

  constructor(post: (text: string) => void) {
    this.post = post
  }

  /** Posts or holds a chunk; returns a promise to wait on when the producer must pause. */
  send(text: string): Promise<void> | undefined {
    if (this.credit > 0 && this.held.length === 0) {
      this.credit--
      this.post(text)
      return undefined
    }
    this.held.push(text)
    this.heldChars += text.length
    return this.heldChars >= HOLD_CHARS ? this.untilCredit() : undefined
  }

  /** The main thread took one message. */
  credited(): void {
    this.credit++
    if (this.held.length > 0) {
      this.credit--
      this.post(this.held.join(''))
      this.held = []
      this.heldChars = 0
    }
    const waiter = this.waiter
    this.waiter = undefined
    waiter?.()
  }

  /** Resolves once every held chunk is posted: before the invocation's outcome, which must come last. */
  async flush(): Promise<void> {
    while (this.held.length > 0) await this.untilCredit()
  }

  private untilCredit(): Promise<void> {
    return new Promise((resolve) => (this.waiter = resolve))
  }
}
