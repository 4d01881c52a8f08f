/**
 * Flow control of a stream's chunks from a worker thread (bridge/invokers/worker-threads/chunk-credit.ts): at most
 * CHUNK_WINDOW messages the main thread has not taken, chunks held meanwhile joined in order, and the
 * function paused once 64 KiB are held, until the main thread takes one.
 */
import { describe, expect, it } from 'vitest'
import { CHUNK_WINDOW, ChunkSender } from '../../bridge/invokers/worker-threads/chunk-credit.ts'

/** A sender and the messages it posted, in order. */
function sender() {
  const posted: string[] = []
  return { chunks: new ChunkSender((text) => posted.push(text)), posted }
}

/** Whether a promise has settled once the microtasks queued before this call have run. */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false
  void promise.then(() => (done = true))
  await new Promise((resolve) => setImmediate(resolve))
  return done
}

describe('ChunkSender', () => {
  it('posts the first CHUNK_WINDOW chunks at once, one message each, without pausing the function', () => {
    const { chunks, posted } = sender()
    expect(CHUNK_WINDOW).toBe(4)
    for (const text of ['a', 'b', 'c', 'd']) expect(chunks.send(text)).toBeUndefined()
    expect(posted).toEqual(['a', 'b', 'c', 'd'])
  })

  it('holds chunks past the window and posts them joined, in order, when the main thread takes a message', () => {
    const { chunks, posted } = sender()
    for (const text of ['a', 'b', 'c', 'd']) chunks.send(text)
    expect(chunks.send('e')).toBeUndefined()
    expect(chunks.send('f')).toBeUndefined()
    expect(posted).toHaveLength(4)
    chunks.credited()
    expect(posted).toEqual(['a', 'b', 'c', 'd', 'ef'])
    // That credit went to "ef": the next chunk is held again, not posted ahead of a fifth message's credit.
    chunks.send('g')
    expect(posted).toHaveLength(5)
    chunks.credited()
    expect(posted.at(-1)).toBe('g')
  })

  it('spends a credit with nothing held on the next chunk, which goes out at once', () => {
    const { chunks, posted } = sender()
    for (const text of ['a', 'b', 'c', 'd']) chunks.send(text)
    chunks.credited()
    expect(posted).toHaveLength(4)
    expect(chunks.send('e')).toBeUndefined()
    expect(posted.at(-1)).toBe('e')
    expect(chunks.send('f')).toBeUndefined()
    expect(posted).toHaveLength(5)
  })

  it('never posts a chunk ahead of held ones, even with credit to spare', () => {
    const { chunks, posted } = sender()
    for (const text of ['a', 'b', 'c', 'd', 'e']) chunks.send(text)
    chunks.credited() // posts "e"
    chunks.credited() // one credit left over, nothing held
    chunks.credited()
    chunks.send('f')
    chunks.send('g')
    expect(posted).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g'])
  })

  it('pauses the function once 64 KiB are held, and lets it go on when the main thread takes a message', async () => {
    const { chunks, posted } = sender()
    for (const text of ['a', 'b', 'c', 'd']) chunks.send(text)
    expect(chunks.send('x'.repeat(64 * 1024 - 2))).toBeUndefined()
    expect(chunks.send('y')).toBeUndefined() // 1 char short of 64 KiB held
    const pause = chunks.send('z')
    expect(pause).toBeInstanceOf(Promise)
    expect(await settled(pause!)).toBe(false)
    chunks.credited()
    expect(await settled(pause!)).toBe(true)
    expect(posted.at(-1)).toBe(`${'x'.repeat(64 * 1024 - 2)}yz`)
    // What was held is gone: the count starts again from nothing.
    expect(chunks.send('x'.repeat(64 * 1024 - 1))).toBeUndefined()
  })

  it('pauses on one chunk of 64 KiB or more as soon as it has to be held', () => {
    const { chunks } = sender()
    expect(chunks.send('x'.repeat(64 * 1024))).toBeUndefined() // there is credit: posted, not held
    for (const text of ['b', 'c', 'd']) chunks.send(text)
    expect(chunks.send('x'.repeat(64 * 1024))).toBeInstanceOf(Promise)
  })

  it('flushes at once when nothing is held, and otherwise once every held chunk is posted', async () => {
    const { chunks, posted } = sender()
    expect(await settled(chunks.flush())).toBe(true)
    for (const text of ['a', 'b', 'c', 'd', 'e']) chunks.send(text)
    const flushed = chunks.flush()
    expect(await settled(flushed)).toBe(false)
    chunks.credited()
    expect(await settled(flushed)).toBe(true)
    expect(posted).toEqual(['a', 'b', 'c', 'd', 'e'])
  })

  it('delivers a fast stream whole and in order to a slow reader, never more than CHUNK_WINDOW messages ahead', async () => {
    const { chunks, posted } = sender()
    let taken = 0
    let mostAhead = 0
    // The main thread: takes one message per turn of the event loop, and credits it.
    const reader = setInterval(() => {
      mostAhead = Math.max(mostAhead, posted.length - taken)
      if (taken < posted.length) {
        taken++
        chunks.credited()
      }
    }, 0)
    const sent: string[] = []
    for (let i = 0; i < 2000; i++) {
      const text = `${i},`.padEnd(100, '.')
      sent.push(text)
      await chunks.send(text)
    }
    await chunks.flush()
    clearInterval(reader)
    expect(posted.join('')).toBe(sent.join(''))
    expect(mostAhead).toBeLessThanOrEqual(CHUNK_WINDOW)
    expect(posted.length).toBeLessThan(sent.length) // chunks held meanwhile went out joined
  })
})
