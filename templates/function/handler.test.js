import { describe, expect, it } from 'vitest'
import { handler } from '../functions/__FUNCTION__/handler.js'

describe('__TOOL__', () => {
  it('answers with its input', async () => {
    expect(await handler({ user: 'test', config: {}, arguments: { input: 'hi' } }, {})).toBe('__FUNCTION__ got: hi')
  })
})
