/**
 * amqplib writes every frame it has queued to the socket with its own
 * write(): with noDelay, one syscall per message, which was a third of the
 * bridge's CPU on RabbitMQ. Its multiplexer writes all queued frames in one
 * synchronous pass; corking the socket around that pass sends them in one
 * writev instead.
 *
 * This reaches into amqplib's connection (its `muxer` and `stream`), so it
 * checks their shape first and does nothing if a version differs.
 */
import type { ChannelModel } from 'amqplib'

interface MuxLike {
  _readIncoming(): void
}
interface SocketLike {
  cork(): void
  uncork(): void
}

const hasFunction = (value: unknown, name: string) =>
  typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>)[name] === 'function'

/** Coalesces the connection's writes; returns whether it could. */
export function coalesceWrites(model: ChannelModel): boolean {
  const connection = (model as unknown as { connection?: { muxer?: unknown; stream?: unknown } }).connection
  const mux = connection?.muxer
  const socket = connection?.stream
  if (!hasFunction(mux, '_readIncoming') || !hasFunction(socket, 'cork') || !hasFunction(socket, 'uncork')) return false
  const muxer = mux as MuxLike
  const out = socket as SocketLike
  const writeQueued = muxer._readIncoming.bind(muxer)
  muxer._readIncoming = () => {
    out.cork()
    try {
      writeQueued()
    } finally {
      out.uncork()
    }
  }
  return true
}
