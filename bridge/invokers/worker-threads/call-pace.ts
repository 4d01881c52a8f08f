/**
 * How long a function's invocations have run lately, in its worker threads,
 * and so how many of them one worker may hold at once when it runs them one
 * at a time: the one running, plus as many waiting in line as take about
 * LINE_BUDGET_US of its time together. A line saves the messages' cost of a
 * worker per invocation (the main thread and the worker each woken per
 * call); it is only worth it for invocations that take less time than that
 * cost, and the budget bounds what one waiting in line loses to it.
 */

/** About how long the invocations waiting in one worker's line take together, µs. */
export const LINE_BUDGET_US = 200
/** The most that may wait in one line. */
export const MAX_IN_LINE = 15
/** Weight of the newest duration in the moving average. */
const WEIGHT = 1 / 8

export class CallPace {
  /** Moving average of how long an invocation ran, µs; undefined before the first ended. */
  private averageUs: number | undefined

  /** One invocation ended after its handler ran this long. */
  observe(us: number): void {
    this.averageUs = this.averageUs === undefined ? us : this.averageUs + (us - this.averageUs) * WEIGHT
  }

  /** Places in a worker: 1, the one running, until the function has shown it is quick. */
  places(): number {
    if (this.averageUs === undefined) return 1
    return 1 + Math.min(MAX_IN_LINE, Math.floor(LINE_BUDGET_US / this.averageUs))
  }
}
