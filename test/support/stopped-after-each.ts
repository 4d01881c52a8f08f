/**
 * Whatever a test starts that has a stop (a bridge, a runtime), stopped after
 * the test whether it passed or not, so that the next test starts on a clean
 * machine. Call it once in the file or describe whose tests start them.
 */
import { afterEach } from 'vitest'

/** Registers the afterEach; each thing started is handed to the function returned, which gives it back. */
export function stoppedAfterEach<T extends { stop(): Promise<unknown> }>(): (started: T) => T {
  const running: T[] = []
  afterEach(async () => {
    for (const started of running.splice(0).reverse()) await started.stop()
  })
  return (started) => {
    running.push(started)
    return started
  }
}
