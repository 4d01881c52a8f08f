/**
 * A gate that calls of functions/thread.ts wait at, on a BroadcastChannel of
 * its own: `inside` counts the calls waiting, `open()` lets them and every
 * later one through, `close()` ends the channel.
 */
import { randomUUID } from 'node:crypto'
import { BroadcastChannel } from 'node:worker_threads'

export function threadGate() {
  const name = `gate-${randomUUID()}`
  const channel = new BroadcastChannel(name)
  channel.unref() // a gate left shut never keeps the tests running
  let inside = 0
  let opened = false
  channel.onmessage = (message) => {
    if ((message as { data: unknown }).data !== 'in') return
    inside++
    if (opened) channel.postMessage('open')
  }
  return {
    name,
    inside: () => inside,
    open() {
      opened = true
      channel.postMessage('open')
    },
    close: () => channel.close(),
  }
}
