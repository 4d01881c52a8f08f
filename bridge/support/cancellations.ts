/**
 * Calls cancelled by their caller, from the client side of the broker to
 * the bridge, within one process (the embedded broker, or a `toolbridge
 * start` whose gateway and bridge share a real broker): the request's
 * correlation id is all the two share. A request whose bridge runs in
 * another process is not reached; its function runs until it answers or
 * times out, as before.
 *
 * A cancellation can come before the bridge takes the request off the
 * queue, so the latest ids are kept for it to find.
 */
const REMEMBERED = 4096

const listeners = new Map<string, () => void>()
const cancelled = new Set<string>()

/** The caller of request `id` gave up on it. */
export function cancelCall(id: string): void {
  const listener = listeners.get(id)
  if (listener) return listener()
  cancelled.add(id)
  // A Set iterates in insertion order: the oldest id goes first.
  if (cancelled.size > REMEMBERED) cancelled.delete(cancelled.values().next().value!)
}

/**
 * A signal aborted when request `id` is cancelled (at once, if it was
 * already), and the way to stop listening; a request without an id cannot be.
 */
export function cancellationOf(id: string | undefined): { signal: AbortSignal; release(): void } {
  const controller = new AbortController()
  if (id === undefined) return { signal: controller.signal, release: () => {} }
  if (cancelled.delete(id)) controller.abort()
  else listeners.set(id, () => controller.abort())
  return { signal: controller.signal, release: () => void listeners.delete(id) }
}
