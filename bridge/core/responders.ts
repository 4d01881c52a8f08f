/**
 * Response modes (docs/wire-contract.md#single-and-stream-answers): how an outcome becomes messages on the response
 * queue. `single` sends one message with the whole text (what a
 * non-streaming TrustGraph client needs); `stream` sends a message per chunk
 * as it arrives, then a final one with `end_of_stream: true`.
 */
import type { ErrorKind } from '../../shared/errors.ts'
import type { ResponseMode } from '../../shared/tool-service-schema.ts'
import {
  chunkResponse,
  encodeResponse,
  errorResponse,
  finalResponse,
  type ToolResponse,
} from '../../shared/protocol.ts'
import type { Outcome } from '../invokers/invoker.ts'

/** `last`: the message ends the answer (`end_of_stream: true`). */
export type Publish = (body: Uint8Array, last: boolean) => Promise<void>

export interface Responder {
  /** A streamed chunk from the function, in order. */
  chunk(text: string): void
  /**
   * Publishes what is left, ending with `end_of_stream: true`, and resolves
   * with the outcome sent: a `single` answer too large for one message goes
   * out as a `too-large` error instead. Rejects if publishing failed.
   */
  finish(outcome: Outcome): Promise<Outcome>
}

/** Bytes of a response around its `response` text. */
const ENVELOPE_BYTES = encodeResponse(chunkResponse('')).byteLength

/** Bytes of a code point once JSON-escaped as encodeResponse writes it (ASCII only, see python-json.ts). */
function escapedBytes(codePoint: number): number {
  if (codePoint === 0x22 || codePoint === 0x5c) return 2 // \" \\
  if (codePoint < 0x20) return 6 // worst case \u00XX
  if (codePoint < 0x7f) return 1
  if (codePoint <= 0xffff) return 6 // \uXXXX
  return 12 // a surrogate pair, \uXXXX\uXXXX
}

/**
 * Splits text into pieces whose encoded messages fit `maxBodyBytes`, only
 * between code points, so no UTF-8 sequence is ever cut.
 */
export function splitForMessages(text: string, maxBodyBytes: number): string[] {
  return splitByEscapedBytes(text, maxBodyBytes - ENVELOPE_BYTES)
}

function splitByEscapedBytes(text: string, budget: number): string[] {
  if (text.length * 6 <= budget) return [text] // fits even if every char were escaped (6 bytes per UTF-16 unit at most)
  const pieces: string[] = []
  let start = 0
  let used = 0
  for (let i = 0; i < text.length; ) {
    const codePoint = text.codePointAt(i)!
    const width = codePoint > 0xffff ? 2 : 1
    const size = escapedBytes(codePoint)
    if (used + size > budget && i > start) {
      pieces.push(text.slice(start, i))
      start = i
      used = 0
    }
    used += size
    i += width
  }
  pieces.push(text.slice(start))
  return pieces
}

export function createResponder(mode: ResponseMode, publish: Publish, maxBodyBytes: number): Responder {
  return mode === 'stream' ? streamResponder(publish, maxBodyBytes) : singleResponder(publish, maxBodyBytes)
}

const send = (publish: Publish, response: ToolResponse) => publish(encodeResponse(response), response.end_of_stream)

/** An error response that fits one message: a long message is cut (whole characters) and marked with "…". */
export function boundedErrorResponse(kind: ErrorKind, message: string, maxBodyBytes: number): ToolResponse {
  const budget = maxBodyBytes - encodeResponse(errorResponse(kind, '')).byteLength
  if (splitByEscapedBytes(message, budget).length === 1) return errorResponse(kind, message)
  const [kept] = splitByEscapedBytes(message, budget - 6) // room for the escaped "…"
  return errorResponse(kind, kept + '…')
}

function singleResponder(publish: Publish, maxBodyBytes: number): Responder {
  const chunks: string[] = []
  return {
    chunk: (text) => void chunks.push(text),
    async finish(outcome) {
      if (!outcome.ok) {
        await send(publish, boundedErrorResponse(outcome.kind, outcome.message, maxBodyBytes))
        return outcome
      }
      chunks.push(outcome.text)
      const body = encodeResponse(finalResponse(chunks.join('')))
      if (body.byteLength > maxBodyBytes) {
        const tooLarge: Outcome = {
          ok: false,
          kind: 'too-large',
          message:
            `response of ${body.byteLength} bytes is over the broker's message limit of ${maxBodyBytes} bytes; ` +
            'set "response: stream" on the tool service to send it in chunks',
        }
        await send(publish, errorResponse(tooLarge.kind, tooLarge.message))
        return tooLarge
      }
      await publish(body, true)
      return outcome
    },
  }
}

function streamResponder(publish: Publish, maxBodyBytes: number): Responder {
  // Publishes run one after another so chunks keep their order.
  let tail: Promise<void> = Promise.resolve()
  const enqueue = (response: ToolResponse) => {
    tail = tail.then(() => send(publish, response))
    tail.catch(() => {}) // seen by finish(); until then not an unhandled rejection
  }
  const enqueueChunks = (text: string) => {
    for (const piece of splitForMessages(text, maxBodyBytes)) enqueue(chunkResponse(piece))
  }
  return {
    chunk: enqueueChunks,
    async finish(outcome) {
      if (!outcome.ok) {
        enqueue(boundedErrorResponse(outcome.kind, outcome.message, maxBodyBytes))
      } else if (splitForMessages(outcome.text, maxBodyBytes).length === 1) {
        enqueue(finalResponse(outcome.text))
      } else {
        enqueueChunks(outcome.text)
        enqueue(finalResponse(''))
      }
      await tail
      return outcome
    },
  }
}
