/**
 * Sessions for 2025-era MCP clients over Streamable HTTP, optional: a client
 * that sends `initialize` gets an `Mcp-Session-Id`, and its later requests
 * with that id are served by the same server instance, on this replica. That
 * is what lets such a client
 *
 * - cancel a call: `notifications/cancelled` names a request id, which only
 *   means something within the session that sent the request; a session's
 *   server aborts only its own calls, never another caller's;
 * - resume a POST stream whose connection dropped, with `Last-Event-ID` on a
 *   GET (mcp-replay.ts keeps the events, within a bounded window);
 * - keep a log level it set with `logging/setLevel`.
 *
 * A request with no session id, or one this replica does not hold (another
 * replica's, or one that expired), is served statelessly as before, so any
 * replica still answers any request; only cancellation and resumption need
 * the replica that holds the session. Sessions are bounded in number (the
 * least recently used one is ended to make room) and end after a time
 * without requests or events.
 */
import { randomUUID } from 'node:crypto'
import { type Server, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server'
import type { ReplayLog } from './mcp-replay.ts'

export interface SessionLimits {
  /** Sessions held at once; one more ends the least recently used. */
  maxSessions: number
  /** A session with no request and no event for this long ends. */
  idleMs: number
  /** The SSE `retry` (ms) a client waits before it reconnects to a dropped stream. */
  retryMs: number
  /** Keep-alive comments on a quiet SSE stream, this often (ms). */
  keepAliveMs: number
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport
  server: Server
  lastUsed: number
  /** The revision the client asked for in its `initialize`. */
  version: string | undefined
}

/** The first revision whose clients take an SSE event with empty data: a stream's priming event. */
const PRIMING_REVISION = '2025-11-25'

/**
 * The request with the revision its session negotiated in its header, when
 * the client sent an earlier one: the session's revision says what the
 * client understands (the SDK primes a stream only for clients of
 * 2025-11-25 on, and judges by the header alone).
 */
function asNegotiated(request: Request, version: string | undefined): Request {
  const sent = request.headers.get('mcp-protocol-version')
  if (version === undefined || version < PRIMING_REVISION || sent === null || sent >= version) return request
  const headers = new Headers(request.headers)
  headers.set('mcp-protocol-version', version)
  return new Request(request, { headers })
}

export class LegacySessions {
  /** Least recently used first: a used session is moved to the end. */
  private readonly sessions = new Map<string, Session>()
  private readonly sweeper: NodeJS.Timeout
  private readonly createServer: () => Server
  private readonly replay: ReplayLog
  private readonly limits: SessionLimits

  constructor(createServer: () => Server, replay: ReplayLog, limits: SessionLimits) {
    this.createServer = createServer
    this.replay = replay
    this.limits = limits
    this.sweeper = setInterval(() => this.sweep(), Math.min(limits.idleMs, 60_000))
    this.sweeper.unref()
  }

  get size(): number {
    return this.sessions.size
  }

  /** Serves an `initialize`: a new session, whose id the answer carries. */
  async open(request: Request, parsedBody: unknown): Promise<Response> {
    const id = randomUUID()
    const server = this.createServer()
    const params = (parsedBody as { params?: { protocolVersion?: unknown } }).params
    const session: Session = {
      server,
      lastUsed: Date.now(),
      version: typeof params?.protocolVersion === 'string' ? params.protocolVersion : undefined,
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => id,
        eventStore: this.replay.storeFor(id, () => void this.touch(id)),
        retryInterval: this.limits.retryMs,
        keepAliveMs: this.limits.keepAliveMs,
        onsessionclosed: () => void this.end(id),
      }),
    }
    await server.connect(session.transport)
    const response = await session.transport.handleRequest(request, { parsedBody })
    // Held only once the client has it: a refused initialize leaves nothing behind.
    if (response.headers.get('mcp-session-id') === id) {
      while (this.sessions.size >= this.limits.maxSessions) this.end(this.sessions.keys().next().value!)
      this.sessions.set(id, session)
    } else void server.close().catch(() => {})
    return response
  }

  /** Serves a request of session `id`; undefined when this replica does not hold it. */
  serve(id: string, request: Request, parsedBody?: unknown): Promise<Response> | undefined {
    const session = this.touch(id)
    return session?.transport.handleRequest(
      asNegotiated(request, session.version),
      parsedBody === undefined ? {} : { parsedBody },
    )
  }

  close(): void {
    clearInterval(this.sweeper)
    for (const id of [...this.sessions.keys()]) this.end(id)
  }

  private touch(id: string): Session | undefined {
    const session = this.sessions.get(id)
    if (session === undefined) return undefined
    session.lastUsed = Date.now()
    this.sessions.delete(id)
    this.sessions.set(id, session)
    return session
  }

  private end(id: string): void {
    const session = this.sessions.get(id)
    if (session === undefined) return
    this.sessions.delete(id)
    this.replay.forget(id)
    void session.server.close().catch(() => {})
  }

  private sweep(): void {
    const idleSince = Date.now() - this.limits.idleMs
    for (const [id, session] of this.sessions) {
      if (session.lastUsed >= idleSince) break
      this.end(id)
    }
  }
}
