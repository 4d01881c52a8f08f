/**
 * How many invocations a worker that runs them one at a time may hold, from
 * how long the function's invocations have run lately.
 */
import { describe, expect, it } from 'vitest'
import { CallPace, LINE_BUDGET_US, MAX_IN_LINE } from '../../bridge/invokers/worker-threads/call-pace.ts'

function paced(...durationsUs: number[]): CallPace {
  const pace = new CallPace()
  for (const us of durationsUs) pace.observe(us)
  return pace
}

describe('a function’s pace', () => {
  it('gives one place, the invocation running, before any invocation has ended', () => {
    expect(new CallPace().places()).toBe(1)
  })

  it('lines up as many as take about the budget together, behind the one running', () => {
    expect(LINE_BUDGET_US).toBe(200)
    expect(paced(100).places()).toBe(3)
    expect(paced(40).places()).toBe(6)
    expect(paced(199).places()).toBe(2)
    expect(paced(200).places()).toBe(2)
    expect(paced(201).places()).toBe(1)
    expect(paced(5000).places()).toBe(1)
  })

  it('lines up no more than MAX_IN_LINE, however quick', () => {
    expect(MAX_IN_LINE).toBe(15)
    expect(paced(13).places()).toBe(16)
    expect(paced(12).places()).toBe(1 + MAX_IN_LINE)
    expect(paced(0).places()).toBe(1 + MAX_IN_LINE)
    expect(paced(0.5).places()).toBe(1 + MAX_IN_LINE)
  })

  it('follows a moving average: the first duration as it is, then each newer one weighs an eighth', () => {
    // 10, then 1610: 10 + 1600 / 8 = 210, over the budget.
    expect(paced(10, 1610).places()).toBe(1)
    // 10, then 810: 10 + 800 / 8 = 110: one in line.
    expect(paced(10, 810).places()).toBe(2)
    // 400, then 0: 400 - 400 / 8 = 350; then 0 again: 306.25; ... eight more zeros: under 100.
    expect(paced(400, 0).places()).toBe(1)
    expect(paced(400, ...Array<number>(10).fill(0)).places()).toBe(1 + Math.floor(200 / (400 * (7 / 8) ** 10)))
  })
})
