/**
 * For the broker tests: waiting for a condition (a fail-safe, never a timing
 * assertion), and a private subscriber on a response queue that keeps every
 * message it sees, by id.
 */
import type { Consumer, Delivery, Transport } from '../../bridge/transports/transport.ts'
import { decodeResponse, ID_PROPERTY, type ToolResponse } from '../../shared/protocol.ts'

/** Resolves once `condition()` holds; fails after `limitMs`. */
export async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  limitMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + limitMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${limitMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** A message on a response queue: its id, and its response, or an error response standing for one that does not decode. */
export function readResponse(delivery: Delivery): { id: string; response: ToolResponse } {
  const decoded = decodeResponse(delivery.body)
  const response: ToolResponse = decoded.ok
    ? decoded.value
    : { error: { type: '(undecodable response)', message: decoded.message }, response: '', end_of_stream: true }
  return { id: delivery.properties[ID_PROPERTY] ?? '(no id)', response }
}

export interface Seen {
  response: ToolResponse
  delivery: Delivery
}

export class ResponseTap {
  readonly seen = new Map<string, Seen[]>()
  private consumer: Consumer | undefined
  private readonly limitMs: number

  private constructor(limitMs: number) {
    this.limitMs = limitMs
  }

  /** `limitMs`: how long ended() waits for an answer before failing. */
  static async open(transport: Transport, queue: string, limitMs = 20_000): Promise<ResponseTap> {
    const tap = new ResponseTap(limitMs)
    tap.consumer = await transport.subscribe(queue, (delivery) => {
      delivery.ack()
      const { id, response } = readResponse(delivery)
      let list = tap.seen.get(id)
      if (!list) tap.seen.set(id, (list = []))
      list.push({ response, delivery })
    })
    return tap
  }

  messages(id: string): Seen[] {
    return this.seen.get(id) ?? []
  }

  /** Every message for `id`, once one of them ends the answer. */
  async ended(id: string): Promise<Seen[]> {
    await waitFor(`the answer to ${id}`, () => this.messages(id).some((m) => m.response.end_of_stream), this.limitMs)
    return this.messages(id)
  }

  close() {
    return this.consumer?.close()
  }
}
