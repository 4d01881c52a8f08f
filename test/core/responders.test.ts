import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createResponder, splitForMessages } from '../../bridge/core/responders.ts'
import type { Outcome } from '../../bridge/invokers/invoker.ts'
import {
  chunkResponse,
  decodeResponse,
  encodeResponse,
  errorResponse,
  finalResponse,
  type ToolResponse,
} from '../../shared/protocol.ts'

const text = (body: Uint8Array): string => new TextDecoder('utf-8', { fatal: true }).decode(body)

/** A fake broker: records every published body, raw and decoded, and checks the `last` flag against it. */
function recorder(options: { failOn?: number; delayMs?: (call: number) => number } = {}) {
  const bodies: Uint8Array[] = []
  const messages: ToolResponse[] = []
  let calls = 0
  let inFlight = 0
  let maxInFlight = 0
  const publish = async (body: Uint8Array, last: boolean): Promise<void> => {
    const call = ++calls
    inFlight++
    maxInFlight = Math.max(maxInFlight, inFlight)
    try {
      const delay = options.delayMs?.(call) ?? 0
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
      if (call === options.failOn) throw new Error(`broker refused message ${call}`)
      bodies.push(body)
      const decoded = decodeResponse(body)
      if (!decoded.ok) throw new Error(`published an undecodable body: ${decoded.message}`)
      // Tracing marks the final message by this flag (bridge/tracing): it must say what the body says.
      if (last !== decoded.value.end_of_stream) throw new Error(`published with last=${last}: ${text(body)}`)
      messages.push(decoded.value)
    } finally {
      inFlight--
    }
  }
  return {
    publish,
    bodies,
    messages,
    get calls() {
      return calls
    },
    get maxInFlight() {
      return maxInFlight
    },
  }
}

/** What a responder in `mode` publishes, under a message limit of `limit` bytes, for `chunks` streamed, then `outcome`. */
async function sent(mode: 'single' | 'stream', limit: number, outcome: Outcome, chunks: string[] = []) {
  const broker = recorder()
  const responder = createResponder(mode, broker.publish, limit)
  for (const chunk of chunks) responder.chunk(chunk)
  await responder.finish(outcome)
  return broker
}

/** What a responder in `mode` publishes for a function error of `message`. */
const errorSent = (mode: 'single' | 'stream', limit: number, message = 'E'.repeat(5000)) =>
  sent(mode, limit, { ok: false, kind: 'function-error', message })

const BIG = 1_000_000
/** Encoded size of a chunk with empty text: the smallest message. */
const ENVELOPE = encodeResponse(chunkResponse('')).byteLength

describe('single mode', () => {
  it('joins streamed chunks and the returned text into one final message', async () => {
    const broker = await sent('single', BIG, { ok: true, text: 'ld' }, ['Hello, ', 'wor'])
    expect(broker.bodies.map(text)).toStrictEqual([
      '{"error": null, "response": "Hello, world", "end_of_stream": true}',
    ])
  })

  it('publishes nothing before finish', async () => {
    const broker = recorder()
    const responder = createResponder('single', broker.publish, BIG)
    responder.chunk('a')
    responder.chunk('b')
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(broker.calls).toBe(0)
    await responder.finish({ ok: true, text: '' })
    expect(broker.messages).toStrictEqual([finalResponse('ab')])
  })

  it('sends a returned text as one final message', async () => {
    const broker = await sent('single', BIG, { ok: true, text: 'Hey alice!' })
    expect(broker.bodies.map(text)).toStrictEqual(['{"error": null, "response": "Hey alice!", "end_of_stream": true}'])
  })

  it('sends a message exactly at the size limit', async () => {
    const limit = encodeResponse(finalResponse('x'.repeat(100))).byteLength
    const broker = await sent('single', limit, { ok: true, text: 'x'.repeat(100) })
    expect(broker.messages).toStrictEqual([finalResponse('x'.repeat(100))])
    expect(broker.bodies[0]!.byteLength).toBe(limit)
  })

  it('sends one too-large error instead of a message one byte over the limit', async () => {
    const body = encodeResponse(finalResponse('x'.repeat(100))).byteLength
    const limit = body - 1
    const broker = await sent('single', limit, { ok: true, text: 'x'.repeat(40) }, ['x'.repeat(60)])
    expect(broker.messages).toStrictEqual([
      {
        error: {
          type: 'too-large',
          message:
            `response of ${body} bytes is over the broker's message limit of ${limit} bytes; ` +
            'set "response: stream" on the tool service to send it in chunks',
        },
        response: '',
        end_of_stream: true,
      },
    ])
  })

  it('measures the limit on the escaped bytes, not the characters', async () => {
    // 20 emoji: 20 characters, but 240 bytes once written as \\uXXXX\\uXXXX pairs.
    const emoji = '😀'.repeat(20)
    const body = encodeResponse(finalResponse(emoji)).byteLength
    expect(body).toBe(encodeResponse(finalResponse('')).byteLength + 240)
    const broker = await sent('single', body - 1, { ok: true, text: emoji })
    expect(broker.messages).toHaveLength(1)
    expect(broker.messages[0]!.error?.type).toBe('too-large')
  })

  it('sends only the error when the outcome is an error, dropping chunks', async () => {
    const broker = await sent('single', BIG, { ok: false, kind: 'function-error', message: 'boom' }, ['partial'])
    expect(broker.bodies.map(text)).toStrictEqual([
      '{"error": {"type": "tool-service-error", "message": "boom"}, "response": "", "end_of_stream": true}',
    ])
  })

  it('keeps an error message within the size limit', async () => {
    const limit = 1000
    const broker = await errorSent('single', limit)
    expect(broker.messages).toHaveLength(1)
    expect(broker.messages[0]!.error?.type).toBe('tool-service-error')
    expect(broker.messages[0]!.error?.message.startsWith('EEEE')).toBe(true)
    expect(broker.bodies[0]!.byteLength).toBeLessThanOrEqual(limit)
  })
})

describe('stream mode', () => {
  it('publishes one message per chunk in order, then an empty final message', async () => {
    const broker = await sent('stream', BIG, { ok: true, text: '' }, ['Once ', 'upon ', 'a time.'])
    expect(broker.bodies.map(text)).toStrictEqual([
      '{"error": null, "response": "Once ", "end_of_stream": false}',
      '{"error": null, "response": "upon ", "end_of_stream": false}',
      '{"error": null, "response": "a time.", "end_of_stream": false}',
      '{"error": null, "response": "", "end_of_stream": true}',
    ])
  })

  it('publishes chunks as they arrive, before finish', async () => {
    const broker = recorder()
    const responder = createResponder('stream', broker.publish, BIG)
    responder.chunk('first')
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(broker.messages).toStrictEqual([chunkResponse('first')])
    await responder.finish({ ok: true, text: '' })
    expect(broker.messages).toStrictEqual([chunkResponse('first'), finalResponse('')])
  })

  it('keeps chunk order and publishes one at a time even when the broker is slow on early messages', async () => {
    const broker = recorder({ delayMs: (call) => (call === 1 ? 20 : call === 2 ? 10 : 0) })
    const responder = createResponder('stream', broker.publish, BIG)
    for (const piece of ['a', 'b', 'c', 'd']) responder.chunk(piece)
    await responder.finish({ ok: true, text: '' })
    expect(broker.messages).toStrictEqual([
      chunkResponse('a'),
      chunkResponse('b'),
      chunkResponse('c'),
      chunkResponse('d'),
      finalResponse(''),
    ])
    expect(broker.maxInFlight).toBe(1)
  })

  it('sends a short returned text that was not streamed as one final message', async () => {
    const broker = await sent('stream', BIG, { ok: true, text: 'all at once' })
    expect(broker.bodies.map(text)).toStrictEqual(['{"error": null, "response": "all at once", "end_of_stream": true}'])
  })

  it('splits a long returned text into chunks that fit, then an empty final message', async () => {
    const limit = ENVELOPE + 30
    const long = 'abcdefghij'.repeat(10)
    const broker = await sent('stream', limit, { ok: true, text: long })
    expect(broker.messages.at(-1)).toStrictEqual(finalResponse(''))
    expect(broker.messages.slice(0, -1).every((m) => !m.end_of_stream && m.error === null)).toBe(true)
    expect(broker.messages.map((m) => m.response).join('')).toBe(long)
    expect(broker.messages.length).toBeGreaterThan(2)
    for (const body of broker.bodies) expect(body.byteLength).toBeLessThanOrEqual(limit)
  })

  it('splits an oversized chunk so that every message fits', async () => {
    const broker = recorder()
    const limit = ENVELOPE + 40
    const responder = createResponder('stream', broker.publish, limit)
    const long = 'é😀"\n'.repeat(30)
    responder.chunk(long)
    await responder.finish({ ok: true, text: '' })
    expect(broker.messages.map((m) => m.response).join('')).toBe(long)
    for (const body of broker.bodies) expect(body.byteLength).toBeLessThanOrEqual(limit)
    expect(broker.messages.at(-1)).toStrictEqual(finalResponse(''))
  })

  it('publishes the error last, after the chunks already streamed', async () => {
    const broker = await sent(
      'stream',
      BIG,
      { ok: false, kind: 'timeout', message: 'function "story" timed out after 10 ms' },
      ['one ', 'two '],
    )
    expect(broker.bodies.map(text)).toStrictEqual([
      '{"error": null, "response": "one ", "end_of_stream": false}',
      '{"error": null, "response": "two ", "end_of_stream": false}',
      '{"error": {"type": "timeout", "message": "function \\"story\\" timed out after 10 ms"}, "response": "", "end_of_stream": true}',
    ])
  })

  it('keeps an error message within the size limit', async () => {
    const limit = 1000
    const broker = await errorSent('stream', limit)
    expect(broker.messages.at(-1)!.error?.type).toBe('tool-service-error')
    for (const body of broker.bodies) expect(body.byteLength).toBeLessThanOrEqual(limit)
  })
})

describe('a long error message', () => {
  const ERROR_ENVELOPE = encodeResponse(errorResponse('function-error', '')).byteLength

  for (const mode of ['single', 'stream'] as const) {
    it(`is cut to fill the message exactly and ends with "…" (${mode} mode)`, async () => {
      const limit = 1000
      const broker = await errorSent(mode, limit)
      const message = broker.messages.at(-1)!.error!.message
      // ASCII: every byte of the limit is used, the escaped "…" (\u2026) taking the last six.
      expect(message).toBe('E'.repeat(limit - ERROR_ENVELOPE - 6) + '…')
      expect(broker.bodies.at(-1)!.byteLength).toBe(limit)
    })
  }

  it('is cut between whole characters, as long as the limit allows, when they are not ASCII', async () => {
    const limit = 1000
    const original = 'é😀'.repeat(500)
    const broker = await errorSent('single', limit, original)
    const message = broker.messages[0]!.error!.message
    expect(message.endsWith('…')).toBe(true)
    const kept = message.slice(0, -1)
    expect(kept.isWellFormed()).toBe(true)
    expect(original.startsWith(kept)).toBe(true)
    expect(broker.bodies[0]!.byteLength).toBeLessThanOrEqual(limit)
    // One more character of the original would not have fitted.
    const next = String.fromCodePoint(original.codePointAt(kept.length)!)
    expect(encodeResponse(errorResponse('function-error', kept + next + '…')).byteLength).toBeGreaterThan(limit)
  })

  it('is sent whole, without "…", when it fits exactly', async () => {
    const message = 'x'.repeat(200)
    const limit = encodeResponse(errorResponse('function-error', message)).byteLength
    const broker = await errorSent('single', limit, message)
    expect(broker.messages[0]!.error!.message).toBe(message)
    const shorter = await errorSent('single', limit - 1, message)
    expect(shorter.messages[0]!.error!.message).toBe('x'.repeat(200 - 7) + '…')
  })
})

describe('splitForMessages', () => {
  const SAMPLES: Record<string, string> = {
    emoji: '😀'.repeat(100),
    'e-acute': 'é'.repeat(100),
    CJK: '漢字かな交じり文'.repeat(20),
    quotes: '"'.repeat(200),
    newlines: '\n'.repeat(200),
    backslashes: '\\'.repeat(200),
    'control characters': '\u0001\u001f\t'.repeat(50),
    'DEL and U+2028': '\u007f\u2028'.repeat(60),
    mixed: 'a😀é"\n漢\\b'.repeat(40),
  }
  // From the smallest limit that fits any single character (an emoji: 12 bytes) upwards.
  const LIMITS = [ENVELOPE + 12, ENVELOPE + 13, ENVELOPE + 17, ENVELOPE + 50, ENVELOPE + 101, 1024]

  for (const [label, sample] of Object.entries(SAMPLES)) {
    it(`splits ${label} into whole characters that fit and join back to the original`, () => {
      for (const limit of LIMITS) {
        const pieces = splitForMessages(sample, limit)
        expect(pieces.join(''), `limit ${limit}`).toBe(sample)
        for (const piece of pieces) {
          expect(piece.length, `limit ${limit}`).toBeGreaterThan(0)
          expect(piece.isWellFormed(), `limit ${limit}: piece ${JSON.stringify(piece)} cuts a character`).toBe(true)
          expect(encodeResponse(chunkResponse(piece)).byteLength, `limit ${limit}`).toBeLessThanOrEqual(limit)
          expect(encodeResponse(finalResponse(piece)).byteLength, `limit ${limit}`).toBeLessThanOrEqual(limit)
        }
      }
    })
  }

  // Characters whose escaped size is known exactly (control characters other than \u0001 are written shorter than the 6 bytes counted).
  const EXACT = ['emoji', 'e-acute', 'CJK', 'quotes', 'backslashes', 'DEL and U+2028', 'mixed ASCII']
  for (const label of EXACT) {
    it(`packs ${label} as full as the limit allows: the next character would not have fitted`, () => {
      const sample = label === 'mixed ASCII' ? 'a😀é"漢\\b\u2028~ '.repeat(40) : SAMPLES[label]!
      for (const limit of LIMITS) {
        const pieces = splitForMessages(sample, limit)
        let at = 0
        for (const piece of pieces.slice(0, -1)) {
          at += piece.length
          const next = String.fromCodePoint(sample.codePointAt(at)!)
          expect(
            encodeResponse(chunkResponse(piece + next)).byteLength,
            `limit ${limit}, piece ${JSON.stringify(piece)}`,
          ).toBeGreaterThan(limit)
        }
      }
    })
  }

  it('counts U+FFFF, the last character of the basic plane, as one \\uXXXX escape', () => {
    expect(splitForMessages('\uffff'.repeat(4), ENVELOPE + 12)).toStrictEqual(['\uffff\uffff', '\uffff\uffff'])
  })

  it('never makes an empty piece, even for a character bigger than the budget', () => {
    expect(splitForMessages('😀😀', ENVELOPE + 6)).toStrictEqual(['😀', '😀'])
  })

  it('puts as many two-byte-escaped characters in a piece as fit', () => {
    expect(splitForMessages('"\\'.repeat(5), ENVELOPE + 6)).toStrictEqual(['"\\"', '\\"\\', '"\\"', '\\'])
    expect(splitForMessages('é'.repeat(5), ENVELOPE + 12)).toStrictEqual(['éé', 'éé', 'é'])
    expect(splitForMessages('\u007f~'.repeat(3), ENVELOPE + 7)).toStrictEqual(['\u007f~', '\u007f~', '\u007f~'])
  })

  it('keeps the UTF-8 bytes of the pieces equal to those of the original', () => {
    const sample = SAMPLES.mixed!
    const pieces = splitForMessages(sample, ENVELOPE + 13)
    expect(pieces.length).toBeGreaterThan(1)
    const utf8 = new TextEncoder()
    const joined = Buffer.concat(pieces.map((p) => utf8.encode(p)))
    expect(joined.equals(Buffer.from(utf8.encode(sample)))).toBe(true)
  })

  it('splits exactly at the budget for ASCII text', () => {
    expect(splitForMessages('abcdefghij'.repeat(3), ENVELOPE + 10)).toStrictEqual([
      'abcdefghij',
      'abcdefghij',
      'abcdefghij',
    ])
  })

  it('puts two emoji per piece when the budget is 24 bytes', () => {
    expect(splitForMessages('😀'.repeat(5), ENVELOPE + 24)).toStrictEqual(['😀😀', '😀😀', '😀'])
  })

  it('returns a short text as one piece', () => {
    expect(splitForMessages('hello', 1024)).toStrictEqual(['hello'])
  })

  it('returns the empty text as one empty piece', () => {
    expect(splitForMessages('', 1024)).toStrictEqual([''])
  })

  it('keeps a lone surrogate within the limit', () => {
    const sample = 'a\ud800b'.repeat(30)
    const limit = ENVELOPE + 12
    const pieces = splitForMessages(sample, limit)
    expect(pieces.join('')).toBe(sample)
    for (const piece of pieces) expect(encodeResponse(chunkResponse(piece)).byteLength).toBeLessThanOrEqual(limit)
  })
})

describe('publish failures', () => {
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => void unhandled.push(reason)
  beforeEach(() => {
    unhandled.length = 0
    process.on('unhandledRejection', onUnhandled)
  })
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled)
  })
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20))

  it('makes finish() reject in single mode', async () => {
    const broker = recorder({ failOn: 1 })
    await expect(createResponder('single', broker.publish, BIG).finish({ ok: true, text: 'x' })).rejects.toThrow(
      'broker refused message 1',
    )
    await settle()
    expect(unhandled).toStrictEqual([])
  })

  it('makes finish() reject in stream mode when a chunk publish failed, with no unhandled rejection meanwhile', async () => {
    const broker = recorder({ failOn: 2 })
    const responder = createResponder('stream', broker.publish, BIG)
    responder.chunk('a')
    responder.chunk('b')
    responder.chunk('c')
    await settle() // the failure happens long before finish() is called
    expect(unhandled).toStrictEqual([])
    await expect(responder.finish({ ok: true, text: '' })).rejects.toThrow('broker refused message 2')
    await settle()
    expect(unhandled).toStrictEqual([])
    // Nothing after the failed message was published out of order.
    expect(broker.messages).toStrictEqual([chunkResponse('a')])
  })

  it('makes finish() reject in stream mode when the final publish fails', async () => {
    const broker = recorder({ failOn: 2 })
    const responder = createResponder('stream', broker.publish, BIG)
    responder.chunk('a')
    await expect(responder.finish({ ok: true, text: '' })).rejects.toThrow('broker refused message 2')
    await settle()
    expect(unhandled).toStrictEqual([])
  })

  it('makes finish() reject in stream mode when publishing the error fails', async () => {
    const broker = recorder({ failOn: 1 })
    await expect(
      createResponder('stream', broker.publish, BIG).finish({ ok: false, kind: 'crash', message: 'x' }),
    ).rejects.toThrow('broker refused message 1')
    await settle()
    expect(unhandled).toStrictEqual([])
  })
})
