/** The list behind messages held and deliveries in flight (bridge/support/linked-list.ts). */
import { describe, expect, it } from 'vitest'
import { LinkedList } from '../../bridge/support/linked-list.ts'

describe('LinkedList', () => {
  it('keeps values in the order they were added, and counts them', () => {
    const list = new LinkedList<string>()
    expect(list.values()).toEqual([])
    list.push('a')
    list.push('b')
    list.push('c')
    expect(list.values()).toEqual(['a', 'b', 'c'])
    expect(list.size).toBe(3)
  })

  it('removes a node from the front, the middle or the back, and goes on adding after it', () => {
    for (const [index, rest] of [
      [0, ['b', 'c', 'd']],
      [1, ['a', 'c', 'd']],
      [2, ['a', 'b', 'd']],
    ] as const) {
      const list = new LinkedList<string>()
      const nodes = ['a', 'b', 'c'].map((value) => list.push(value))
      list.remove(nodes[index]!)
      list.push('d')
      expect(list.values()).toEqual(rest)
      expect(list.size).toBe(3)
    }
  })

  it('removes every node in any order, down to an empty list that takes values again', () => {
    const list = new LinkedList<number>()
    const nodes = [1, 2, 3, 4].map((value) => list.push(value))
    for (const index of [2, 0, 3]) list.remove(nodes[index]!)
    expect(list.values()).toEqual([2])
    list.remove(nodes[1]!)
    expect(list.values()).toEqual([])
    expect(list.size).toBe(0)
    list.push(5)
    list.push(6)
    expect(list.values()).toEqual([5, 6])
  })

  it('cuts a removed node loose, so it holds on to nothing', () => {
    const list = new LinkedList<string>()
    list.push('a')
    const b = list.push('b')
    list.push('c')
    list.remove(b)
    expect(b.prev).toBeUndefined()
    expect(b.next).toBeUndefined()
  })

  it('gives a copy of its values, which it may change while the copy is used', () => {
    const list = new LinkedList<string>()
    const a = list.push('a')
    list.push('b')
    const values = list.values()
    list.remove(a)
    expect(values).toEqual(['a', 'b'])
  })

  it('drains: its values in order, and it is empty after, ready for more', () => {
    const list = new LinkedList<string>()
    list.push('a')
    list.push('b')
    expect(list.drain()).toEqual(['a', 'b'])
    expect(list.size).toBe(0)
    expect(list.values()).toEqual([])
    list.push('c')
    expect(list.values()).toEqual(['c'])
  })
})
