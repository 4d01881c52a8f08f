/**
 * What producers and consumers need from the client that made them, apart
 * from the client itself, so that they depend on this and the client on
 * them, never the two on each other.
 */
import type { BackoffOptions } from './backoff.ts'
import type { Connection, ConnectionLogger } from './connection.ts'

export interface ClientLogger extends ConnectionLogger {
  info(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
}

/** A producer or consumer, as its client keeps it: to close it with the client. */
export interface ClientResource {
  close(): Promise<void>
}

export interface ClientContext {
  readonly logger: ClientLogger
  readonly operationTimeoutMs: number
  readonly backoff: BackoffOptions
  readonly closed: boolean
  /** A consumer resubscribed after losing its connection. */
  resubscribed(): void
  /** A live connection to the broker that owns `topic`. */
  connectionFor(topic: string): Promise<Connection>
  forget(resource: ClientResource): void
}
