/**
 * File changes, gathered into batches: an editor's save is several events
 * (write, rename, chmod) and a `git checkout` is many files, so a batch is
 * handed on only once no change has come for `quietMs`. One batch is
 * handled at a time; changes that come meanwhile make the next one.
 */
export class ChangeBatches {
  private pending = new Set<string>()
  private timer: NodeJS.Timeout | undefined
  private busy: Promise<void> | undefined
  private readonly quietMs: number
  private readonly handle: (files: Set<string>) => Promise<void>

  constructor(quietMs: number, handle: (files: Set<string>) => Promise<void>) {
    this.quietMs = quietMs
    this.handle = handle
  }

  add(file: string): void {
    this.pending.add(file)
    clearTimeout(this.timer)
    this.timer = setTimeout(() => void this.flush(), this.quietMs)
  }

  /** Resolves once no batch is being handled. */
  async idle(): Promise<void> {
    while (this.busy) await this.busy
  }

  stop(): void {
    clearTimeout(this.timer)
    this.pending.clear()
  }

  private async flush(): Promise<void> {
    this.timer = undefined
    if (this.busy) {
      // Handled after the batch in hand: its files stay pending until then.
      await this.idle()
      if (this.timer !== undefined || this.pending.size === 0) return
    }
    const files = this.pending
    this.pending = new Set()
    this.busy = this.handle(files).finally(() => {
      this.busy = undefined
    })
    await this.busy
  }
}
