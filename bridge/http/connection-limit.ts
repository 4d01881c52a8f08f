/**
 * How many connections the gateway holds, without ever turning a probe away.
 *
 * Node's own `server.maxConnections` drops a connection past the cap as it
 * is accepted, before its request says what it wants, so a client holding
 * many idle sockets (or streams) would also fail the health and readiness
 * probes. Here every new connection is taken; past the cap the connection
 * that has been idle longest (no request being answered on it: a keep-alive
 * socket, or one that has not sent its request yet) is closed to make room.
 * The connections busy with a request are bounded elsewhere (calls in flight,
 * event streams, MCP streams), so a probe always finds its way in. Only when
 * every connection is busy is the new one closed.
 */
import type { Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

export interface ConnectionLimitEvents {
  /** An idle connection was closed to make room for a new one. */
  evicted?: () => void
  /** A new connection was closed: every held connection was busy with a request. */
  refused?: () => void
}

export class ConnectionLimit {
  /** Idle connections, longest idle first (a Set keeps insertion order). */
  private readonly idle = new Set<Socket>()
  /** Requests being answered on each busy connection (HTTP/1.1 pipelining may queue several). */
  private readonly busy = new Map<Socket, number>()
  readonly max: number
  private readonly events: ConnectionLimitEvents

  constructor(max: number, events: ConnectionLimitEvents = {}) {
    this.max = max
    this.events = events
  }

  get open(): number {
    return this.idle.size + this.busy.size
  }

  /** Tracks the server's connections and requests from now on. */
  attach(server: Server): void {
    server.on('connection', (socket: Socket) => this.accepted(socket))
    server.on('request', (req, res: ServerResponse) => this.requestStarted(req.socket, res))
  }

  private accepted(socket: Socket): void {
    if (this.open >= this.max && !this.evictIdle()) {
      this.events.refused?.()
      socket.destroy()
      return
    }
    this.idle.add(socket)
    socket.once('close', () => {
      this.idle.delete(socket)
      this.busy.delete(socket)
    })
  }

  private evictIdle(): boolean {
    const oldest = this.idle.values().next()
    if (oldest.done) return false
    this.idle.delete(oldest.value)
    oldest.value.destroy()
    this.events.evicted?.()
    return true
  }

  private requestStarted(socket: Socket, res: ServerResponse): void {
    if (socket.destroyed) return
    this.idle.delete(socket)
    this.busy.set(socket, (this.busy.get(socket) ?? 0) + 1)
    res.once('close', () => {
      const left = (this.busy.get(socket) ?? 1) - 1
      if (left > 0) return void this.busy.set(socket, left)
      this.busy.delete(socket)
      // Idle again, and now the newest idle one.
      if (!socket.destroyed) this.idle.add(socket)
    })
  }
}
