/** One bound on text for logs and error answers (bridge/support/bounded-text.ts). */
import { describe, expect, it } from 'vitest'
import { bounded, MAX_TEXT } from '../../bridge/support/bounded-text.ts'

describe('bounded', () => {
  it('leaves a text of up to 4096 UTF-16 units as it is', () => {
    expect(MAX_TEXT).toBe(4096)
    expect(bounded('')).toBe('')
    expect(bounded('a short error')).toBe('a short error')
    const atLimit = 'x'.repeat(MAX_TEXT)
    expect(bounded(atLimit)).toBe(atLimit)
  })

  it('cuts a longer text to its first 4096 units and "…", so a reader sees it was cut', () => {
    expect(bounded(`${'x'.repeat(MAX_TEXT)}y`)).toBe(`${'x'.repeat(MAX_TEXT)}…`)
    expect(bounded('z'.repeat(10_000_000))).toHaveLength(MAX_TEXT + 1)
  })

  it('takes another bound when given one', () => {
    expect(bounded('abcdef', 3)).toBe('abc…')
    expect(bounded('abc', 3)).toBe('abc')
    expect(bounded('abcd', 0)).toBe('…')
  })
})
