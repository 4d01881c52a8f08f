/**
 * The messages between the main thread and a worker thread travel as JSON
 * text: what one side posts, the other reads back as it was sent.
 */
import { describe, expect, it } from 'vitest'
import { post, read, type FromWorker, type ToWorker } from '../../bridge/invokers/worker-threads/worker-messages.ts'

describe('worker messages', () => {
  it('are posted as text, which a structured clone copies without walking an object', () => {
    const message: ToWorker = { type: 'credit', id: 7 }
    expect(typeof post(message)).toBe('string')
  })

  it('read back as they were sent: a batch of invocations, and their ends with text of any kind', () => {
    const invoke: ToWorker = {
      type: 'invoke',
      calls: [
        { id: 1, requestId: 'a', timeoutMs: 3000, event: { arguments: { topic: 'π "quoted" \n' }, config: {} } },
        { id: 2, requestId: 'b', timeoutMs: 3000, event: null },
      ],
    }
    const ended: FromWorker = {
      type: 'ended',
      ends: [
        { id: 1, us: 12, type: 'done', text: '✓ done' },
        { id: 2, us: 3400, type: 'error', errorType: 'TypeError', errorMessage: 'bad' },
      ],
      arrayBufferBytes: 0,
    }
    expect(read(post(invoke))).toStrictEqual(invoke)
    expect(read(post(ended))).toStrictEqual(ended)
  })
})
