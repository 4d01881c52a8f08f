/**
 * Whether an invocation sent to a worker's line has started, in memory both
 * threads share: one cell per invocation, set by the main thread when it
 * sends it, claimed by the worker as it starts it, or taken back by the main
 * thread before that. Whichever comes first wins, atomically, so the main
 * thread can take back what has not started even from a worker stuck in
 * code that never yields, and a worker never starts what was taken back.
 */

/** Cells, more than a worker ever holds (a line, plus those taken back that it has yet to skip). */
export const CLAIM_CELLS = 256
/** Tags repeat after this many invocations, far more than a cell could see while one waits. */
const TAG_RANGE = 2 ** 30

const cellOf = (id: number) => id % CLAIM_CELLS
/** Never 0 (an empty cell) and positive: a claimed invocation's cell holds its tag negated. */
const tagOf = (id: number) => (id % TAG_RANGE) + 1

export class LineClaims {
  readonly cells: Int32Array

  /** A new set of cells (main thread), or the worker's view of one it was given. */
  constructor(cells: Int32Array = new Int32Array(new SharedArrayBuffer(CLAIM_CELLS * 4))) {
    this.cells = cells
  }

  /** Main thread: the invocation is being sent to the worker. */
  sent(id: number): void {
    Atomics.store(this.cells, cellOf(id), tagOf(id))
  }

  /** Worker: claims the invocation as it starts it; false if it was taken back (skip it). */
  start(id: number): boolean {
    const tag = tagOf(id)
    return Atomics.compareExchange(this.cells, cellOf(id), tag, -tag) === tag
  }

  /** Main thread: takes the invocation back unless it has started; true if it never will. */
  takeBack(id: number): boolean {
    const tag = tagOf(id)
    return Atomics.compareExchange(this.cells, cellOf(id), tag, 0) === tag
  }
}
