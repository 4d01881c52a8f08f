/**
 * A function's console lines, from the bridge that runs it to the caller
 * that wants them (an MCP client that asked for log messages), within one
 * process, as cancellations.ts does for cancellations: the request's
 * correlation id is all the two share. A call answered by a bridge in
 * another process sends no lines.
 *
 * Nothing is kept for a call nobody listens to: its invoker is not even
 * asked to capture lines.
 */
export type CallLogLevel = 'debug' | 'info' | 'warning' | 'error'
export type CallLogSink = (level: CallLogLevel, text: string) => void

const listeners = new Map<string, CallLogSink>()

/** Tells `sink` the lines the function writes while it answers request `id`; returns the way to stop. */
export function listenToCallLogs(id: string, sink: CallLogSink): () => void {
  listeners.set(id, sink)
  return () => {
    if (listeners.get(id) === sink) listeners.delete(id)
  }
}

/** Where the lines of request `id` go; undefined when nobody listens. */
export function callLogSinkOf(id: string): CallLogSink | undefined {
  return listeners.get(id)
}
