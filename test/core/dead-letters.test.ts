import { describe, expect, it } from 'vitest'
import {
  DEAD_LETTER_PREFIX,
  deadLetterMessage,
  readDeadLetter,
  replayPlan,
  replayTargets,
} from '../../bridge/core/dead-letters.ts'
import { encodeRequest } from '../../shared/protocol.ts'

const reason = {
  kind: 'too-large' as const,
  message: 'its answer could not be published: refused',
  service: 'svc',
  queue: 'request:tg:svc',
  attempts: 3,
}
const when = new Date('2026-12-03T16:00:00.000Z')
const DL_ID = '0b7c2a4e-5d1f-4c8a-9e3b-6f2d1a0c9b8e'

describe('dead letters', () => {
  it('keep the body as it came, the request properties, and why in properties of their own', () => {
    const body = encodeRequest({ arguments: { n: 1 } })
    const letter = deadLetterMessage({ body, properties: { id: 'r1', trace: 't' } }, reason, 'dl-1', when)
    expect(letter.body).toBe(body)
    expect(letter.properties).toStrictEqual({
      id: 'r1',
      trace: 't',
      [`${DEAD_LETTER_PREFIX}id`]: 'dl-1',
      [`${DEAD_LETTER_PREFIX}kind`]: 'too-large',
      [`${DEAD_LETTER_PREFIX}message`]: 'its answer could not be published: refused',
      [`${DEAD_LETTER_PREFIX}service`]: 'svc',
      [`${DEAD_LETTER_PREFIX}queue`]: 'request:tg:svc',
      [`${DEAD_LETTER_PREFIX}time`]: '2026-12-03T16:00:00.000Z',
      [`${DEAD_LETTER_PREFIX}attempts`]: '3',
    })
  })

  it('a replayed request that fails again is not marked twice: its old reason is replaced', () => {
    const first = deadLetterMessage({ body: Buffer.from('x'), properties: { id: 'r' } }, reason, 'dl-1', when)
    const again = deadLetterMessage(first, { ...reason, kind: 'crash' }, 'dl-2', when)
    expect(again.properties[`${DEAD_LETTER_PREFIX}id`]).toBe('dl-2')
    expect(again.properties[`${DEAD_LETTER_PREFIX}kind`]).toBe('crash')
    expect(Object.keys(again.properties)).toHaveLength(8)
  })

  it("drops the bridge's properties it does not write (another version's), keeping the request's own", () => {
    const marked = { id: 'r', [`${DEAD_LETTER_PREFIX}note`]: 'old', [`x-${DEAD_LETTER_PREFIX}`]: 'own' }
    const letter = deadLetterMessage({ body: Buffer.from('x'), properties: marked }, reason, 'dl', when)
    expect(letter.properties[`${DEAD_LETTER_PREFIX}note`]).toBeUndefined()
    expect(letter.properties[`x-${DEAD_LETTER_PREFIX}`]).toBe('own')
  })

  it('read back: the reason, and the request with only its own properties', () => {
    const body = encodeRequest({ arguments: { n: 1 } })
    const letter = deadLetterMessage({ body, properties: { id: 'r1' } }, reason, DL_ID, when)
    expect(readDeadLetter(letter.body, letter.properties)).toStrictEqual({
      ok: true,
      deadLetter: {
        ...reason,
        id: DL_ID,
        time: '2026-12-03T16:00:00.000Z',
        body,
        properties: { id: 'r1' },
        oddities: [],
      },
    })
  })

  it('a message that is not a dead letter says which properties it lacks', () => {
    const read = readDeadLetter(Buffer.from('x'), { id: 'r', [`${DEAD_LETTER_PREFIX}id`]: 'x' })
    expect(read).toStrictEqual({
      ok: false,
      message: `not a dead letter: no ${['kind', 'message', 'service', 'queue', 'time', 'attempts'].map((f) => DEAD_LETTER_PREFIX + f).join(', ')}`,
    })
  })

  it('an unknown kind, attempts that are not a count, a time or an id the bridge would not write: read, and each named as odd', () => {
    const letter = deadLetterMessage({ body: Buffer.from('x'), properties: {} }, reason, DL_ID, when)
    letter.properties[`${DEAD_LETTER_PREFIX}kind`] = 'weird'
    letter.properties[`${DEAD_LETTER_PREFIX}attempts`] = 'many'
    letter.properties[`${DEAD_LETTER_PREFIX}time`] = 'yesterday'
    letter.properties[`${DEAD_LETTER_PREFIX}id`] = 'mine'
    const read = readDeadLetter(letter.body, letter.properties)
    if (!read.ok) throw new Error(read.message)
    expect([read.deadLetter.kind, read.deadLetter.attempts]).toStrictEqual(['crash', 0])
    expect(read.deadLetter.oddities).toStrictEqual([
      'its id "mine" is not a UUID',
      'its kind "weird" is no error kind',
      'its attempts "many" are no count',
      'its time "yesterday" is not ISO 8601',
    ])
  })

  describe('replayPlan', () => {
    const services = [
      { id: 'svc', requestQueue: 'request:tg:svc', responseQueue: 'response:tg:svc' },
      { id: 'other', requestQueue: 'flow:tg:other-in', responseQueue: 'flow:tg:other-out' },
    ]
    const declared = replayTargets(services)
    const letterOf = (body: Uint8Array, change: Partial<typeof reason> = {}) => {
      const letter = deadLetterMessage({ body, properties: { id: 'r' } }, { ...reason, ...change }, DL_ID, when)
      const read = readDeadLetter(letter.body, letter.properties)
      if (!read.ok) throw new Error(read.message)
      return read.deadLetter
    }
    const good = letterOf(encodeRequest({}))

    it("sends a request back to its service's declared request queue, in either spelling", () => {
      expect(replayPlan(good, declared)).toStrictEqual({ ok: true, queue: 'request:tg:svc', service: 'svc' })
      const spelledAsPulsar = { ...good, queue: 'non-persistent://tg/request/svc' }
      expect(replayPlan(spelledAsPulsar, declared)).toStrictEqual({
        ok: true,
        queue: spelledAsPulsar.queue,
        service: 'svc',
      })
    })

    it('refuses a body that is no request, a queue that is none, and properties the bridge would not write', () => {
      expect(replayPlan({ ...good, body: Buffer.from('{not json') }, declared)).toMatchObject({
        problem: expect.stringMatching(/^its body is not a request: /),
      })
      expect(replayPlan({ ...good, queue: 'nonsense' }, declared)).toMatchObject({
        problem: expect.stringMatching(/^its queue "nonsense" is not a queue name: /),
      })
      expect(replayPlan({ ...good, oddities: ['its id "x" is not a UUID'] }, declared)).toStrictEqual({
        ok: false,
        problem: 'not as toolbridge writes dead letters: its id "x" is not a UUID',
      })
    })

    it("refuses a queue no declared service reads (a configuration service's), and another service's", () => {
      expect(replayPlan(letterOf(encodeRequest({}), { queue: 'request:tg:config' }), declared)).toStrictEqual({
        ok: false,
        problem:
          '"request:tg:config" is not the request queue of a tool service serverless.yml declares (--to <queue> sends it elsewhere)',
      })
      expect(replayPlan(letterOf(encodeRequest({}), { queue: 'flow:tg:other-in' }), declared)).toStrictEqual({
        ok: false,
        problem: 'it names service "svc", but "flow:tg:other-in" is the request queue of "other"',
      })
    })

    it('never sends to a response queue, by its class or because a service answers on it, even with --to', () => {
      for (const queue of ['response:tg:svc', 'non-persistent://tg/response/anything', 'flow:tg:other-out']) {
        expect(replayPlan({ ...good, queue }, declared)).toStrictEqual({
          ok: false,
          problem: `"${queue}" is a response queue: replay sends requests only`,
        })
        expect(replayPlan(good, replayTargets(services, queue))).toMatchObject({ ok: false })
      }
    })

    it('--to sends it to a queue the operator names, undeclared or not', () => {
      expect(replayPlan(good, replayTargets(services, 'request:tg:elsewhere'))).toStrictEqual({
        ok: true,
        queue: 'request:tg:elsewhere',
      })
    })
  })
})
