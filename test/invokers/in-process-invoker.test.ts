/**
 * The in-process invoker's context.signal: aborted when the call's time is
 * up (a TimeoutError naming the function) and when its caller cancels it;
 * left alone when the handler answers by itself.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { InProcessInvoker } from '../../bridge/invokers/in-process-invoker.ts'
import type { FunctionTarget } from '../../bridge/invokers/invoker.ts'
import type { HandlerLocation } from '../../bridge/project/tool-services.ts'

const dir = mkdtempSync(join(tmpdir(), 'toolbridge-in-process-'))
// Each handler keeps the signal it got, to be looked at after the call.
writeFileSync(
  join(dir, 'handlers.mjs'),
  `export const signals = []
export const quick = async (_event, context) => { signals.push(context.signal); return 'done' }
export const waits = (_event, context) => { signals.push(context.signal); return new Promise(() => {}) }
`,
)
const { signals } = (await import(join(dir, 'handlers.mjs'))) as { signals: AbortSignal[] }

const target = (exportName: string, timeoutMs: number): FunctionTarget<HandlerLocation> => ({
  functionName: exportName,
  location: { kind: 'handler', handler: `handlers.${exportName}`, lambdaName: exportName },
  response: 'single',
  timeoutMs,
  concurrency: 1,
})

describe('the in-process invoker and context.signal', () => {
  const invoker = new InProcessInvoker(dir)
  afterAll(async () => {
    await invoker.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const invoke = (exportName: string, timeoutMs: number, signal = new AbortController().signal) =>
    invoker.invoke({ target: target(exportName, timeoutMs), event: {}, onChunk: () => {}, signal })

  it('leaves the signal alone when the handler answers by itself', async () => {
    expect(await invoke('quick', 5_000)).toEqual({ ok: true, text: 'done' })
    expect(signals.at(-1)!.aborted).toBe(false)
  })

  it("aborts it with a TimeoutError when the call's time is up", async () => {
    const outcome = await invoke('waits', 20)
    expect(outcome).toMatchObject({ ok: false, kind: 'timeout', message: 'function "waits" timed out after 20 ms' })
    const signal = signals.at(-1)!
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBeInstanceOf(DOMException)
    expect((signal.reason as DOMException).name).toBe('TimeoutError')
    expect((signal.reason as DOMException).message).toBe('function "waits" timed out after 20 ms')
  })

  it('aborts it when the caller cancels, before the timeout', async () => {
    const caller = new AbortController()
    const pending = invoke('waits', 60_000, caller.signal)
    await new Promise((resolve) => setTimeout(resolve, 10))
    const signal = signals.at(-1)!
    expect(signal.aborted).toBe(false)
    caller.abort()
    expect(signal.aborted).toBe(true)
    expect((signal.reason as DOMException).name).toBe('AbortError')
    void pending
  })

  it('aborts it at once for a caller that had cancelled already', async () => {
    const caller = new AbortController()
    caller.abort()
    void invoke('waits', 60_000, caller.signal)
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(signals.at(-1)!.aborted).toBe(true)
  })
})
