import { describe, expect, it } from 'vitest'
import { handler } from '../functions/hello/handler.ts'

describe('say-hello', () => {
  it('greets by name', async () => {
    expect(await handler({ user: 'test', config: {}, arguments: { name: 'Ada' } }, {})).toBe('Hello, Ada!')
  })

  it('refuses a call without a name', async () => {
    await expect(handler({ user: 'test', config: {}, arguments: {} }, {})).rejects.toThrow(/name/)
  })
})
