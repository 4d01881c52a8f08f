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
/**
 * Until a caller in this process holds a signal for a call, no request can
 * be cancelled: the bridge then gives its requests no signal, and allocates
 * and registers nothing for them.
 */
let callersMayCancel = false
const NOT_CANCELLABLE = { signal: undefined, release: () => {} }

/** A caller in this process holds an AbortSignal for its call: said before the call is published. */
export function callerMayCancel(): void {
  callersMayCancel = true
}

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
 * already), and the way to stop listening; none for a request without an id,
 * or while no caller in this process can cancel.
 */
export function cancellationOf(id: string | undefined): { signal: AbortSignal | undefined; release(): void } {
  if (id === undefined || !callersMayCancel) return NOT_CANCELLABLE
  const controller = new AbortController()
  if (cancelled.delete(id)) controller.abort()
  else listeners.set(id, () => controller.abort())
  return { signal: controller.signal, release: () => void listeners.delete(id) }
}
