/**
 * How many HTTP calls the gateway takes on, and when each goes to the broker (bridge/http/admission.ts).
 * The gateway's answers on a socket (429, callers that went away) are in hardening-http.test.ts; here
 * the caller underneath is one whose calls this test finishes by hand, to see exactly which were sent.
 */
import { getEventListeners } from 'node:events'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { CallerGoneError, gatedCaller, InFlightCap } from '../../bridge/http/admission.ts'
import { HttpError } from '../../bridge/http/responses.ts'
import type { ToolServiceSpec, ToolSpec } from '../../bridge/project/tool-services.ts'
import { ToolCallTimeoutError } from '../../bridge/trustgraph/request-client.ts'
import type { ToolCaller, ToolEntry } from '../../bridge/trustgraph/tool-caller.ts'
import { thrownBy } from '../support/thrown.ts'

describe('InFlightCap', () => {
  it('takes calls up to its cap, then answers 429 with Retry-After, retriable', () => {
    const cap = new InFlightCap(2)
    cap.enter()
    cap.enter()
    expect(cap.inFlight).toBe(2)
    const refusal = thrownBy(() => cap.enter())
    expect(refusal).toBeInstanceOf(HttpError)
    expect(refusal).toMatchObject({
      status: 429,
      headers: { 'retry-after': '1' },
      retriable: true,
      message: 'too many calls in flight (2); try again shortly',
    })
    expect(cap.inFlight).toBe(2)
  })

  it('frees a place when a call ends, once however often its release is called', () => {
    const cap = new InFlightCap(2)
    const first = cap.enter()
    cap.enter()
    first()
    first()
    expect(cap.inFlight).toBe(1)
    cap.enter()
    expect(() => cap.enter()).toThrow(HttpError)
  })

  it('with a cap of 0, takes nothing', () => {
    expect(() => new InFlightCap(0).enter()).toThrow('too many calls in flight (0)')
  })
})

/** A call the test ends by hand. */
interface Sent {
  name: string
  arguments: Record<string, unknown>
  answer(text: string): void
  fail(error: Error): void
}

function service(id: string, concurrency: number, tools: string[], timeoutMs = 60_000): ToolEntry[] {
  const spec = { id, concurrency, timeoutMs } as ToolServiceSpec
  return tools.map((name) => ({ spec, tool: { name } as ToolSpec }))
}

/** A ToolCaller for these services whose calls stay open until the test answers them. */
function openCaller(...entries: ToolEntry[][]) {
  const sent: Sent[] = []
  const inner: ToolCaller & { closed: boolean } = {
    tools: new Map(entries.flat().map((entry) => [entry.tool.name, entry])),
    closed: false,
    call(name, request) {
      if (!inner.tools.has(name)) return Promise.reject(new Error(`unknown tool "${name}"`))
      return new Promise((answer, fail) => sent.push({ name, arguments: request.arguments, answer, fail }))
    },
    async close() {
      inner.closed = true
    },
  }
  return { inner, sent, caller: gatedCaller(inner) }
}

/** Lets every settled promise's callbacks run. */
const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('gatedCaller', () => {
  it('passes calls, answers and failures through, with their tool and arguments', async () => {
    const { caller, sent } = openCaller(service('svc', 2, ['echo']))
    const answered = caller.call('echo', { arguments: { x: 1 } })
    const failed = caller.call('echo', { arguments: { x: 2 } })
    await turn()
    expect(sent.map(({ name, arguments: args }) => ({ name, args }))).toEqual([
      { name: 'echo', args: { x: 1 } },
      { name: 'echo', args: { x: 2 } },
    ])
    sent[0]!.answer('one')
    sent[1]!.fail(new Error('the function failed'))
    await expect(answered).resolves.toBe('one')
    await expect(failed).rejects.toThrow('the function failed')
  })

  it('sends a service at most its concurrency at once; the others wait, and go in order as calls end', async () => {
    const { caller, sent } = openCaller(service('svc', 2, ['echo']))
    const calls = [1, 2, 3, 4, 5].map((n) => caller.call('echo', { arguments: { n } }).catch((err: Error) => err))
    await turn()
    expect(sent.map((s) => s.arguments.n)).toEqual([1, 2])
    expect(caller.queued).toBe(3)
    sent[1]!.answer('two')
    await turn()
    expect(sent.map((s) => s.arguments.n)).toEqual([1, 2, 3])
    expect(caller.queued).toBe(2)
    sent[0]!.fail(new Error('failed')) // a failed call frees its slot too
    await turn()
    expect(sent.map((s) => s.arguments.n)).toEqual([1, 2, 3, 4])
    for (const s of sent.slice(2)) s.answer('ok')
    await turn()
    sent[4]!.answer('five')
    expect(await calls[4]).toBe('five')
    expect(await calls[0]).toEqual(new Error('failed'))
    expect(caller.queued).toBe(0)
  })

  it('sends a call at once while the service has a free slot, however many calls came and went before', async () => {
    const { caller, sent } = openCaller(service('svc', 2, ['echo']))
    for (let round = 0; round < 3; round++) {
      const calls = [caller.call('echo', { arguments: {} }), caller.call('echo', { arguments: {} })]
      await turn()
      expect(sent).toHaveLength(2 * round + 2)
      for (const s of sent.slice(-2)) s.answer('ok')
      await Promise.all(calls)
    }
    expect(caller.queued).toBe(0)
  })

  it('gates each service on its own, and the tools of one service together', async () => {
    const { caller, sent } = openCaller(service('a', 1, ['a1', 'a2']), service('b', 1, ['b1']))
    void caller.call('a1', { arguments: {} })
    void caller.call('a2', { arguments: {} })
    void caller.call('b1', { arguments: {} })
    await turn()
    expect(sent.map((s) => s.name)).toEqual(['a1', 'b1'])
    expect(caller.queued).toBe(1)
  })

  it('never sends a waiting call whose caller went away, and gives its turn to the next', async () => {
    const { caller, sent } = openCaller(service('svc', 1, ['echo']))
    void caller.call('echo', { arguments: { n: 1 } })
    const gone = new AbortController()
    const dropped = caller.call('echo', { arguments: { n: 2 } }, { signal: gone.signal })
    const next = caller.call('echo', { arguments: { n: 3 } })
    await turn()
    gone.abort()
    await expect(dropped).rejects.toThrow(CallerGoneError)
    await expect(dropped).rejects.toMatchObject({
      name: 'CallerGoneError',
      message: 'caller gone before the call was sent',
    })
    expect(caller.queued).toBe(1)
    expect(getEventListeners(gone.signal, 'abort')).toHaveLength(0)
    sent[0]!.answer('one')
    await turn()
    expect(sent.map((s) => s.arguments.n)).toEqual([1, 3])
    sent[1]!.answer('three')
    await expect(next).resolves.toBe('three')
  })

  it('refuses a call whose caller is already gone, even with a slot free', async () => {
    const { caller, sent } = openCaller(service('svc', 1, ['echo']))
    const refused = caller.call('echo', { arguments: {} }, { signal: AbortSignal.abort() })
    await expect(refused).rejects.toThrow(CallerGoneError)
    await expect(refused).rejects.toThrow('caller gone before the call was sent')
    await turn()
    expect(sent).toHaveLength(0)
  })

  it('keeps the slot of a sent call whose caller went away until its answer: the function still runs it', async () => {
    const { caller, sent } = openCaller(service('svc', 1, ['echo']))
    const gone = new AbortController()
    const first = caller.call('echo', { arguments: { n: 1 } }, { signal: gone.signal })
    void caller.call('echo', { arguments: { n: 2 } })
    await turn()
    gone.abort()
    await turn()
    expect(sent).toHaveLength(1)
    expect(getEventListeners(gone.signal, 'abort')).toHaveLength(0)
    sent[0]!.answer('one')
    await expect(first).resolves.toBe('one')
    await turn()
    expect(sent).toHaveLength(2)
  })

  it('passes an unknown tool to the caller underneath, for its own answer', async () => {
    const { caller, inner } = openCaller(service('svc', 1, ['echo']))
    await expect(caller.call('nope', { arguments: {} })).rejects.toThrow('unknown tool "nope"')
    expect(caller.tools).toBe(inner.tools)
    await caller.close()
    expect(inner.closed).toBe(true)
  })

  describe('waiting longer than the service’s timeout', () => {
    beforeEach(() => vi.useFakeTimers())
    afterEach(() => vi.useRealTimers())

    it('refuses a call not started within the timeout as a timeout, and never sends it', async () => {
      const { caller, sent } = openCaller(service('svc', 1, ['echo'], 500))
      void caller.call('echo', { arguments: { n: 1 } })
      const waiting = caller.call('echo', { arguments: { n: 2 } })
      const outcome = waiting.catch((err: unknown) => err)
      await vi.advanceTimersByTimeAsync(499)
      expect(caller.queued).toBe(1)
      await vi.advanceTimersByTimeAsync(1)
      const error = await outcome
      expect(error).toBeInstanceOf(ToolCallTimeoutError)
      expect(error).toMatchObject({ message: 'not started within 500 ms: the service is busy' })
      expect(caller.queued).toBe(0)
      sent[0]!.answer('one')
      await vi.advanceTimersByTimeAsync(0)
      expect(sent).toHaveLength(1)
    })

    it('stops the clock of a call once it starts: no timer or listener outlives its wait', async () => {
      const { caller, sent } = openCaller(service('svc', 1, ['echo'], 500))
      const signal = new AbortController().signal
      void caller.call('echo', { arguments: { n: 1 } })
      const second = caller.call('echo', { arguments: { n: 2 } }, { signal })
      await vi.advanceTimersByTimeAsync(0)
      expect(vi.getTimerCount()).toBe(1)
      expect(getEventListeners(signal, 'abort')).toHaveLength(1)
      sent[0]!.answer('one')
      await vi.advanceTimersByTimeAsync(0)
      expect(vi.getTimerCount()).toBe(0)
      expect(getEventListeners(signal, 'abort')).toHaveLength(0)
      await vi.advanceTimersByTimeAsync(1000)
      sent[1]!.answer('two')
      await expect(second).resolves.toBe('two')
    })
  })
})
