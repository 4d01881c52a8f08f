/**
 * The worker of bench/thread-hop.bench.ts: answers each wake-up from the
 * main thread, by message or through shared memory, as its mode says.
 */
import { parentPort, workerData } from 'node:worker_threads'

export interface HopSetup {
  mode: 'message' | 'shared'
  /** Shared mode: [0] the main thread's sequence number, [1] the worker's answer to it; -1 in [0] ends the worker. */
  flags: SharedArrayBuffer
  /** Shared mode: how long the worker checks for the next number before it parks (µs). */
  spinUs: number
}

const { mode, flags: shared, spinUs } = workerData as HopSetup

if (mode === 'message') parentPort!.on('message', (message: unknown) => parentPort!.postMessage(message))
else {
  const flags = new Int32Array(shared)
  let seen = 0
  // Atomics.waitAsync holds no handle: without one, the worker would end while parked.
  const keepAlive = setInterval(() => {}, 2 ** 30)
  // Parked with Atomics.waitAsync, not Atomics.wait: the worker's event loop stays free, as a function's needs.
  for (;;) {
    let next = Atomics.load(flags, 0)
    const spinUntil = performance.now() + spinUs / 1000
    while (next === seen && performance.now() < spinUntil) next = Atomics.load(flags, 0)
    if (next === seen) {
      const parked = Atomics.waitAsync(flags, 0, seen)
      if (parked.async) await parked.value
      next = Atomics.load(flags, 0)
    }
    if (next === -1) break
    seen = next
    Atomics.store(flags, 1, next)
    Atomics.notify(flags, 1)
  }
  clearInterval(keepAlive)
}
