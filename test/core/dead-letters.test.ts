import { describe, expect, it } from 'vitest'
import { DEAD_LETTER_PREFIX, deadLetterMessage, readDeadLetter, replayProblem } from '../../bridge/core/dead-letters.ts'
import { encodeRequest } from '../../shared/protocol.ts'

const reason = {
  kind: 'too-large' as const,
  message: 'its answer could not be published: refused',
  service: 'svc',
  queue: 'request:tg:svc',
  attempts: 3,
}
const when = new Date('2026-12-03T16:00:00.000Z')

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
    const letter = deadLetterMessage({ body, properties: { id: 'r1' } }, reason, 'dl-1', when)
    expect(readDeadLetter(letter.body, letter.properties)).toStrictEqual({
      ok: true,
      deadLetter: { ...reason, id: 'dl-1', time: '2026-12-03T16:00:00.000Z', body, properties: { id: 'r1' } },
    })
  })

  it('a message that is not a dead letter says which properties it lacks', () => {
    const read = readDeadLetter(Buffer.from('x'), { id: 'r', [`${DEAD_LETTER_PREFIX}id`]: 'x' })
    expect(read).toStrictEqual({
      ok: false,
      message: `not a dead letter: no ${['kind', 'message', 'service', 'queue', 'time', 'attempts'].map((f) => DEAD_LETTER_PREFIX + f).join(', ')}`,
    })
  })

  it('an unknown kind or attempts that are not a count are read as crash and 0, not refused', () => {
    const letter = deadLetterMessage({ body: Buffer.from('x'), properties: {} }, reason, 'dl', when)
    letter.properties[`${DEAD_LETTER_PREFIX}kind`] = 'weird'
    letter.properties[`${DEAD_LETTER_PREFIX}attempts`] = 'many'
    const read = readDeadLetter(letter.body, letter.properties)
    expect(read.ok && [read.deadLetter.kind, read.deadLetter.attempts]).toStrictEqual(['crash', 0])
  })

  it('replayProblem: none for a request on a queue; the reason for a body that is no request or a queue that is none', () => {
    const good = readDeadLetter(
      ...(Object.values(deadLetterMessage({ body: encodeRequest({}), properties: {} }, reason, 'a', when)) as [
        Uint8Array,
        Record<string, string>,
      ]),
    )
    if (!good.ok) throw new Error(good.message)
    expect(replayProblem(good.deadLetter)).toBeUndefined()
    expect(replayProblem({ ...good.deadLetter, body: Buffer.from('{not json') })).toMatch(
      /^its body is not a request: /,
    )
    expect(replayProblem({ ...good.deadLetter, queue: 'nonsense' })).toMatch(
      /^its queue "nonsense" is not a queue name: /,
    )
  })
})
