/** Cancellations from a client to the bridge in the same process (bridge/support/cancellations.ts). */
import { describe, expect, it } from 'vitest'
import { callerMayCancel, cancelCall, cancellationOf } from '../../bridge/support/cancellations.ts'

let next = 0
const newId = () => `cancellations-test.${++next}`

describe('cancellations', () => {
  // First in the file: the module's state starts with no caller that can cancel.
  it('gives no signal, and keeps nothing, while no caller in this process can cancel', () => {
    const id = newId()
    expect(cancellationOf(id).signal).toBeUndefined()
    cancelCall(id) // remembered, as a cancellation can come before the request is taken
    callerMayCancel()
    expect(cancellationOf(id).signal?.aborted).toBe(true)
  })

  it('aborts the signal of the request cancelled, and no other', () => {
    const [a, b] = [newId(), newId()]
    const first = cancellationOf(a)
    const second = cancellationOf(b)
    expect(first.signal?.aborted).toBe(false)
    cancelCall(a)
    expect(first.signal?.aborted).toBe(true)
    expect(second.signal?.aborted).toBe(false)
    first.release()
    second.release()
  })

  it('aborts at once a request cancelled before the bridge took it, once', () => {
    const id = newId()
    cancelCall(id)
    const taken = cancellationOf(id)
    expect(taken.signal?.aborted).toBe(true)
    taken.release()
    // The id is forgotten once found: a later request with it starts afresh.
    expect(cancellationOf(id).signal?.aborted).toBe(false)
  })

  it('stops listening once released: a late cancellation is remembered instead', () => {
    const id = newId()
    const taken = cancellationOf(id)
    taken.release()
    cancelCall(id)
    expect(taken.signal?.aborted).toBe(false)
    expect(cancellationOf(id).signal?.aborted).toBe(true)
  })

  it('gives a request without an id no signal: it cannot be cancelled', () => {
    const taken = cancellationOf(undefined)
    cancelCall('undefined')
    expect(taken.signal).toBeUndefined()
    taken.release()
  })

  it('remembers the latest 4096 cancellations, forgetting the oldest', () => {
    const ids = Array.from({ length: 4097 }, newId)
    for (const id of ids) cancelCall(id)
    expect(cancellationOf(ids[0]!).signal?.aborted).toBe(false)
    expect(cancellationOf(ids[1]!).signal?.aborted).toBe(true)
    expect(cancellationOf(ids[4096]!).signal?.aborted).toBe(true)
  })
})
