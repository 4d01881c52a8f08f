/**
 * A request/response client that behaves like TrustGraph's
 * RequestResponseClient: one private subscription to the response queue,
 * responses matched by `id`, the first message resolving a plain call and
 * chunks concatenated until `end_of_stream` for a streaming one.
 */
import { callerMayCancel, cancelCall } from '../support/cancellations.ts'
import { randomUUID } from 'node:crypto'
import { isToolbridgeError, ToolbridgeError } from '../../shared/errors.ts'
import {
  decodeResponse,
  encodeRequest,
  ID_PROPERTY,
  kindOfWireErrorType,
  wireErrorType,
} from '../../shared/protocol.ts'
import type { Consumer, Transport } from '../transports/transport.ts'

export const DEFAULT_CLIENT_TIMEOUT_MS = 600_000 // TrustGraph's ToolServiceClient default

export interface ToolCall {
  user?: string
  config?: Record<string, unknown>
  arguments?: Record<string, unknown>
}

export interface CallOptions {
  timeoutMs?: number
  /** Streams: called with each non-empty chunk; the call resolves at `end_of_stream`. */
  onChunk?: (text: string) => void
  /**
   * The caller is gone: chunks are no longer kept or passed on. The call
   * still settles when its answer ends (or times out), so that whoever
   * counts calls on the service knows when it is done with this one.
   */
  signal?: AbortSignal
  /** W3C trace context (traceparent, tracestate, baggage) to send in the request's properties. */
  traceContext?: Readonly<Record<string, string>> | undefined
  /** Told the request's `id` before it is published: the bridge reports the request by it. */
  onId?: (id: string) => void
}

/**
 * An error response from the service: its wire `type` and `message`. Not
 * retriable: the service has answered, and calling again could run the tool twice.
 */
export class ToolCallError extends ToolbridgeError {
  readonly type: string
  constructor(type: string, message: string) {
    super(kindOfWireErrorType(type), message)
    this.name = 'ToolCallError'
    this.type = type
  }
}

/** No answer in time. Not retriable either: the tool may be running still. */
export class ToolCallTimeoutError extends ToolbridgeError {
  constructor(message: string) {
    super('timeout', message)
    this.name = 'ToolCallTimeoutError'
  }
}

interface Pending {
  id: string
  slot: number
  chunks: string[]
  onChunk: ((text: string) => void) | undefined
  /** Its caller is gone: chunks are dropped as they arrive. */
  dropChunks: boolean
  resolve(text: string): void
  reject(error: Error): void
}

export class RequestClient {
  private readonly transport: Transport
  private readonly requestQueue: string
  private readonly responseQueue: string
  /**
   * Calls waiting for their answer, in reusable slots rather than a Map: a
   * long-lived Map churned on every call leaves dead hash tables in old
   * space that keep young garbage alive through scavenges. An id is
   * `<this client's uuid>.<slot>.<sequence>`, so an answer finds its slot
   * without a lookup table.
   */
  private readonly slots: (Pending | undefined)[] = []
  private readonly freeSlots: number[] = []
  private readonly prefix = randomUUID() + '.'
  private sequence = 0
  private consumer: Consumer | undefined

  constructor(transport: Transport, queues: { requestQueue: string; responseQueue: string }) {
    this.transport = transport
    this.requestQueue = queues.requestQueue
    this.responseQueue = queues.responseQueue
  }

  /** Subscribes to the response queue; must resolve before the first call. */
  async start(): Promise<void> {
    this.consumer = await this.transport.subscribe(this.responseQueue, (delivery) => {
      delivery.ack()
      const id = delivery.properties[ID_PROPERTY]
      const pending = id === undefined ? undefined : this.lookup(id)
      if (!pending) return // someone else's answer, or a duplicate of one we already have
      const decoded = decodeResponse(delivery.body)
      if (!decoded.ok) return this.settle(id!, new ToolCallError('bad-response', decoded.message))
      const response = decoded.value
      if (response.error) return this.settle(id!, new ToolCallError(response.error.type, response.error.message))
      if (!pending.onChunk) return this.settle(id!, response.response) // first message wins
      if (response.response !== '' && !pending.dropChunks) {
        pending.chunks.push(response.response)
        pending.onChunk(response.response)
      }
      if (response.end_of_stream) this.settle(id!, pending.chunks.join(''))
    })
  }

  call(request: ToolCall, options: CallOptions = {}): Promise<string> {
    let body: Uint8Array
    try {
      body = encodeRequest(request)
    } catch (err) {
      // Refused before it takes a slot: the same error the bridge would answer.
      return Promise.reject(isToolbridgeError(err) ? new ToolCallError(wireErrorType(err.kind), err.message) : err)
    }
    const slot = this.freeSlots.pop() ?? this.slots.length
    const id = `${this.prefix}${slot}.${++this.sequence}`
    options.onId?.(id)
    const timeoutMs = options.timeoutMs ?? DEFAULT_CLIENT_TIMEOUT_MS
    const { signal } = options
    if (signal) callerMayCancel()
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => this.settle(id, new ToolCallTimeoutError(`no answer on ${this.responseQueue} within ${timeoutMs} ms`)),
        timeoutMs,
      )
      const pending: Pending = {
        id,
        slot,
        chunks: [],
        onChunk: options.onChunk,
        dropChunks: false,
        resolve: (text) => (done(), resolve(text)),
        reject: (error) => (done(), reject(error)),
      }
      const onAbort = () => {
        pending.dropChunks = true
        pending.chunks = []
        cancelCall(id) // a bridge in this process tells the function
      }
      const done = () => (clearTimeout(timer), signal?.removeEventListener('abort', onAbort))
      this.slots[slot] = pending
      if (signal?.aborted) onAbort()
      else signal?.addEventListener('abort', onAbort, { once: true })
      const properties = options.traceContext ? { ...options.traceContext, [ID_PROPERTY]: id } : { [ID_PROPERTY]: id }
      this.transport.publish(this.requestQueue, body, properties).catch((err: Error) => this.settle(id, err))
    })
  }

  async close(): Promise<void> {
    await this.consumer?.close()
    for (const pending of this.slots.filter((p) => p !== undefined)) this.settle(pending.id, new Error('client closed'))
  }

  private lookup(id: string): Pending | undefined {
    if (!id.startsWith(this.prefix)) return undefined
    const slot = Number.parseInt(id.slice(this.prefix.length), 10)
    const pending = this.slots[slot]
    return pending !== undefined && pending.id === id ? pending : undefined
  }

  private settle(id: string, result: string | Error): void {
    const pending = this.lookup(id)
    if (!pending) return
    this.slots[pending.slot] = undefined
    this.freeSlots.push(pending.slot)
    if (typeof result === 'string') pending.resolve(result)
    else pending.reject(result)
  }
}
