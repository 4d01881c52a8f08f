/**
 * The export queue between ended spans and the exporter: it never blocks,
 * runs one export at a time, and counts what it drops. Real SDK spans; the
 * exporters are the SDK's in-memory one and ones that fail or never answer.
 */
import {
  AlwaysOffSampler,
  InMemorySpanExporter,
  type ReadableSpan,
  type SpanExporter,
  TracerProvider,
} from '@opentelemetry/sdk-trace'
import { describe, expect, it } from 'vitest'
import { BoundedSpanProcessor } from '../../bridge/tracing/bounded-span-processor.ts'
import { waitFor } from '../support/response-tap.ts'

type ExportResult = Parameters<Parameters<SpanExporter['export']>[1]>[0]

/** An exporter whose exports end when the test says so. */
class HeldExporter implements SpanExporter {
  readonly batches: ReadableSpan[][] = []
  private readonly pending: ((result: ExportResult) => void)[] = []
  shutDown = false
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.batches.push(spans)
    this.pending.push(done)
  }
  finish(code: 0 | 1): void {
    this.pending.shift()?.({ code })
  }
  get waiting(): number {
    return this.pending.length
  }
  async shutdown(): Promise<void> {
    this.shutDown = true
  }
}

function setUp(exporter: SpanExporter, options: { maxQueueSize: number; maxBatchSize: number; delayMs: number }) {
  let dropped = 0
  const processor = new BoundedSpanProcessor(exporter, { ...options, onDropped: (n) => (dropped += n) })
  const provider = new TracerProvider({ spanProcessors: [processor] })
  const tracer = provider.getTracer('test')
  const end = (count: number) => {
    for (let i = 0; i < count; i++) tracer.startSpan(`span ${i}`).end()
  }
  return { processor, provider, end, dropped: () => dropped }
}

describe('BoundedSpanProcessor', () => {
  it('waits the delay for a batch that is not full', async () => {
    const exporter = new InMemorySpanExporter()
    const { end } = setUp(exporter, { maxQueueSize: 100, maxBatchSize: 4, delayMs: 20 })
    end(2)
    expect(exporter.getFinishedSpans()).toHaveLength(0)
    await waitFor('the spans after the delay', () => exporter.getFinishedSpans().length === 2, 5000)
  })

  it('exports a full batch at once, and the rest after the delay', async () => {
    const exporter = new InMemorySpanExporter()
    const { end, dropped } = setUp(exporter, { maxQueueSize: 100, maxBatchSize: 4, delayMs: 20 })
    end(5)
    expect(exporter.getFinishedSpans()).toHaveLength(4)
    await waitFor('the last span after the delay', () => exporter.getFinishedSpans().length === 5, 5000)
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['span 0', 'span 1', 'span 2', 'span 3', 'span 4'])
    expect(dropped()).toBe(0)
  })

  it('runs one export at a time; past the queue, spans are dropped and counted, never waited for', () => {
    const exporter = new HeldExporter()
    const { end, dropped } = setUp(exporter, { maxQueueSize: 6, maxBatchSize: 3, delayMs: 60_000 })
    end(3) // a full batch: its export starts, and hangs
    expect(exporter.waiting).toBe(1)
    end(10) // 6 fit in the queue, 4 do not
    expect(exporter.waiting).toBe(1)
    expect(dropped()).toBe(4)
  })

  it('starts the next export when one ends, and counts a failed export as dropped', async () => {
    const exporter = new HeldExporter()
    const { end, dropped } = setUp(exporter, { maxQueueSize: 10, maxBatchSize: 2, delayMs: 60_000 })
    end(2)
    end(2)
    expect(exporter.batches).toHaveLength(1)
    exporter.finish(1) // failed
    await waitFor('the next export', () => exporter.batches.length === 2, 5000)
    expect(dropped()).toBe(2)
    exporter.finish(0)
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(dropped()).toBe(2)
    expect(exporter.batches).toHaveLength(2) // nothing left: no empty export
  })

  it('counts an exporter that throws as a failed export', async () => {
    const throwing: SpanExporter = {
      export() {
        throw new Error('broken')
      },
      shutdown: async () => {},
    }
    const { end, dropped } = setUp(throwing, { maxQueueSize: 10, maxBatchSize: 2, delayMs: 60_000 })
    end(2)
    await waitFor('the failure counted', () => dropped() === 2, 5000)
    end(2) // the next export runs too
    await waitFor('the next failure counted', () => dropped() === 4, 5000)
  })

  it('waits on a flush for the export under way', async () => {
    const exporter = new HeldExporter()
    const { processor, end } = setUp(exporter, { maxQueueSize: 10, maxBatchSize: 2, delayMs: 60_000 })
    end(2)
    let flushed = false
    const flush = processor.forceFlush().then(() => (flushed = true))
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(flushed).toBe(false)
    exporter.finish(0)
    await flush
  })

  it('exports what waits on a flush, and shuts the exporter down after', async () => {
    const exporter = new InMemorySpanExporter()
    const { provider, end } = setUp(exporter, { maxQueueSize: 100, maxBatchSize: 50, delayMs: 60_000 })
    end(7)
    expect(exporter.getFinishedSpans()).toHaveLength(0)
    await provider.forceFlush()
    expect(exporter.getFinishedSpans()).toHaveLength(7)
    const held = new HeldExporter()
    const second = setUp(held, { maxQueueSize: 100, maxBatchSize: 50, delayMs: 60_000 })
    second.end(1)
    const shutdown = second.provider.shutdown()
    await waitFor('the export on shutdown', () => held.waiting === 1, 5000)
    held.finish(0)
    await shutdown
    expect(held.shutDown).toBe(true)
    second.end(1) // after shutdown: not queued
    expect(held.batches).toHaveLength(1)
  })

  it('leaves out spans that are not sampled', () => {
    const exporter = new HeldExporter()
    let dropped = 0
    const processor = new BoundedSpanProcessor(exporter, {
      maxQueueSize: 1,
      maxBatchSize: 1,
      delayMs: 60_000,
      onDropped: (n) => (dropped += n),
    })
    const tracer = new TracerProvider({ sampler: new AlwaysOffSampler(), spanProcessors: [processor] }).getTracer('t')
    for (let i = 0; i < 5; i++) tracer.startSpan('not sampled').end()
    expect(exporter.batches).toHaveLength(0)
    expect(dropped).toBe(0)
  })
})
