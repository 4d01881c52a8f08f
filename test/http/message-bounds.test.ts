/** What one MCP message may be before the SDK reads it (bridge/http/message-bounds.ts). */
import { describe, expect, it } from 'vitest'
import { MAX_MESSAGE_DEPTH, refuseMessage } from '../../bridge/http/message-bounds.ts'

/** A tools/call whose arguments make the whole message exactly `depth` levels deep. */
function callNested(depth: number): unknown {
  let value: unknown = 1
  for (let level = 3; level <= depth; level++) value = { a: value }
  return { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: value } }
}

describe('refuseMessage', () => {
  it('lets one message through, however many fields it has', () => {
    expect(refuseMessage({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).toBeUndefined()
    expect(refuseMessage(callNested(10))).toBeUndefined()
  })

  it('refuses a batch, an empty one included, as an invalid request (-32600)', () => {
    for (const batch of [[], [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]]) {
      expect(refuseMessage(batch)).toEqual({
        code: -32600,
        message: 'Invalid Request: JSON-RPC batches are not supported; send one message per request',
      })
    }
  })

  it(`takes a message ${MAX_MESSAGE_DEPTH} levels deep and refuses one a level deeper, arrays counted too`, () => {
    expect(MAX_MESSAGE_DEPTH).toBe(1000)
    expect(refuseMessage(callNested(MAX_MESSAGE_DEPTH))).toBeUndefined()
    expect(refuseMessage(callNested(MAX_MESSAGE_DEPTH + 1))).toEqual({
      code: -32600,
      message: 'Invalid Request: the message nests deeper than 1000 levels',
    })
    let array: unknown = []
    for (let level = 1; level <= MAX_MESSAGE_DEPTH; level++) array = [array]
    expect(refuseMessage({ jsonrpc: '2.0', id: 1, method: 'x', params: { a: array } })?.code).toBe(-32600)
  })
})
