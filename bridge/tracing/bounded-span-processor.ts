/**
 * Batches ended spans for an exporter without ever holding up a request:
 * `onEnd` only appends to a bounded queue, one export runs at a time in the
 * background, and what does not fit (a slow or unreachable collector) is
 * dropped and counted, never waited for. The SDK's BatchSpanProcessor drops
 * too, but says so only in a diagnostic log; this one reports the count.
 */
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace'

export interface BoundedSpanProcessorOptions {
  /** Spans waiting for export at most; past it, new spans are dropped. */
  maxQueueSize: number
  /** Spans per export. */
  maxBatchSize: number
  /** How long a span may wait for a full batch. */
  delayMs: number
  /** Called with the number of spans dropped: queue full, or the export failed. */
  onDropped: (spans: number) => void
}

/** The SDK's ExportResultCode.SUCCESS (@opentelemetry/core): not worth importing a package for. */
const EXPORT_SUCCESS = 0

export class BoundedSpanProcessor implements SpanProcessor {
  private readonly queue: ReadableSpan[] = []
  private readonly exporter: SpanExporter
  private readonly maxQueueSize: number
  private readonly maxBatchSize: number
  private readonly delayMs: number
  private readonly onDropped: (spans: number) => void
  private timer: NodeJS.Timeout | undefined
  private exporting: Promise<void> | undefined

  constructor(exporter: SpanExporter, options: BoundedSpanProcessorOptions) {
    this.exporter = exporter
    this.maxQueueSize = options.maxQueueSize
    this.maxBatchSize = options.maxBatchSize
    this.delayMs = options.delayMs
    this.onDropped = options.onDropped
  }

  onStart(): void {}

  /** The SDK calls it for sampled spans only, and no more once shut down. */
  onEnd(span: ReadableSpan): void {
    if (this.queue.length >= this.maxQueueSize) return this.onDropped(1)
    this.queue.push(span)
    if (this.queue.length >= this.maxBatchSize) this.exportNext()
    else if (this.timer === undefined) {
      this.timer = setTimeout(() => this.exportNext(), this.delayMs)
      this.timer.unref() // a pending batch never keeps the process alive
    }
  }

  /** Starts one export unless one is running; each export starts the next while spans wait. */
  private exportNext(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.exporting !== undefined || this.queue.length === 0) return
    const batch = this.queue.splice(0, this.maxBatchSize)
    this.exporting = new Promise<void>((resolve) => {
      try {
        this.exporter.export(batch, (result) => {
          if (result.code !== EXPORT_SUCCESS) this.onDropped(batch.length)
          resolve()
        })
      } catch {
        this.onDropped(batch.length)
        resolve()
      }
    }).then(() => {
      this.exporting = undefined
      this.exportNext()
    })
  }

  async forceFlush(): Promise<void> {
    while (this.exporting !== undefined || this.queue.length > 0) {
      this.exportNext()
      await this.exporting
    }
  }

  async shutdown(): Promise<void> {
    await this.forceFlush()
    await this.exporter.shutdown()
  }
}
