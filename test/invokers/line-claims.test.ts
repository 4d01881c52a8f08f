/**
 * The cells that say whether an invocation in a worker's line has started:
 * whichever of the worker's start and the main thread's take-back comes
 * first wins, and a cell reused by a later invocation never starts an
 * earlier one.
 */
import { describe, expect, it } from 'vitest'
import { CLAIM_CELLS, LineClaims } from '../../bridge/invokers/worker-threads/line-claims.ts'

describe('line claims', () => {
  // The worker starts an invocation; the main thread takes it back. Whichever claims it first has it, once.
  it.each([
    ['start an invocation sent, once; it cannot be taken back after', 7, 'start', 'takeBack'],
    ['take back an invocation sent and not started, once; the worker then skips it', 8, 'takeBack', 'start'],
  ] as const)('%s', (_title, id, first, then) => {
    const claims = new LineClaims()
    claims.sent(id)
    expect(claims[first](id)).toBe(true)
    expect(claims[first](id)).toBe(false)
    expect(claims[then](id)).toBe(false)
  })

  it('neither start nor take back an invocation never sent, the first included', () => {
    const claims = new LineClaims()
    expect(claims.start(1)).toBe(false)
    expect(claims.takeBack(1)).toBe(false)
    expect(claims.start(3)).toBe(false)
  })

  it('hold CLAIM_CELLS invocations sent one after another, each claimed in its own cell', () => {
    const claims = new LineClaims()
    const ids = Array.from({ length: CLAIM_CELLS }, (_, i) => 1000 + i)
    for (const id of ids) claims.sent(id)
    expect(ids.filter((id) => id % 2 === 0).every((id) => claims.start(id))).toBe(true)
    expect(ids.filter((id) => id % 2 === 1).every((id) => claims.takeBack(id))).toBe(true)
  })

  it('keep invocations in different cells apart', () => {
    const claims = new LineClaims()
    claims.sent(1)
    claims.sent(2)
    expect(claims.takeBack(2)).toBe(true)
    expect(claims.start(1)).toBe(true)
  })

  it('never start an earlier invocation whose cell a later one took, nor take the later one back for it', () => {
    const claims = new LineClaims()
    claims.sent(5)
    claims.sent(5 + CLAIM_CELLS) // the same cell
    expect(claims.start(5)).toBe(false)
    expect(claims.takeBack(5)).toBe(false)
    expect(claims.start(5 + CLAIM_CELLS)).toBe(true)
  })
})
