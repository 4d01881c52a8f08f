import { describe, expect, it } from 'vitest'
import { handler } from '../functions/story/handler.js'

async function chunks(result) {
  const out = []
  for await (const chunk of result) out.push(chunk)
  return out
}

describe('tell-story', () => {
  it('streams one chunk per sentence', async () => {
    const result = await handler({ user: 'test', config: {}, arguments: { hero: 'Ada', sentences: 2 } }, {})
    const told = await chunks(result)
    expect(told).toHaveLength(2)
    expect(told.join('')).toContain('Ada')
  })

  it('refuses too many sentences', async () => {
    await expect(handler({ user: 'test', config: {}, arguments: { hero: 'Ada', sentences: 11 } }, {})).rejects.toThrow(
      /between 1 and 10/,
    )
  })
})
