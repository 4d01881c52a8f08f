/**
 * Generated request messages for the fuzz test: malformed and hostile ones
 * (invalid JSON and UTF-8, wrong types, huge fields, deep nesting, prototype
 * keys, missing, empty and duplicate ids, tools the service does not have)
 * interleaved with valid requests whose answers are known. Seeded, so a
 * failure can be replayed with the seed the test prints.
 *
 * Each message says what must come back for its id:
 * - `answer`: exactly this text (valid requests);
 * - `error`: an error answer of one of these wire types;
 * - `settled`: some final answer, error or not (the function decides);
 * - `unknown-id`: sent without a usable id, answered under `unknown`.
 */

export type Expectation =
  | { type: 'answer'; text: string }
  | { type: 'error'; errorTypes: string[] }
  | { type: 'settled' }
  | { type: 'unknown-id' }

export interface HostileMessage {
  /** Which generator made it, for the test's summary. */
  category: string
  /** The tool service whose request queue it goes to. */
  serviceId: string
  body: Uint8Array
  /** The `id` property: absent, or any string. */
  id: string | undefined
  expect: Expectation
}

/** Valid requests' expected answers come from the handlers themselves, in process. */
export interface Oracle {
  joke(user: string, topic: string): Promise<string>
  story(hero: string, sentences: number): Promise<string>
}

/** mulberry32: small, fast, good enough to pick cases. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const utf8 = (text: string) => Buffer.from(text, 'utf8')
/** A TrustGraph request: config and arguments as JSON strings, as its clients send them. */
const request = (user: unknown, config: unknown, args: unknown) =>
  utf8(JSON.stringify({ user, config: JSON.stringify(config), arguments: JSON.stringify(args) }))

const BAD_REQUEST = ['bad-request']
const INVALID = ['invalid-arguments']

export async function generateMessages(count: number, seed: number, oracle: Oracle): Promise<HostileMessage[]> {
  const random = seededRandom(seed)
  const int = (n: number) => Math.floor(random() * n)
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!
  const word = () => Array.from({ length: 1 + int(8) }, () => String.fromCharCode(97 + int(26))).join('')
  let serial = 0
  const nextId = (category: string) => `fuzz-${seed}-${++serial}-${category}`

  /** Each returns one message; `id` is filled in by the caller unless the case is about ids. */
  type Case = (id: string) => Promise<Omit<HostileMessage, 'category'>> | Omit<HostileMessage, 'category'>
  const hostile: Record<string, Case> = {
    'invalid-json': (id) => {
      const texts = [
        '{',
        '{"user": "a", "config": ',
        'nul',
        '[1, 2',
        '{"a":1}}',
        '\u0000\u0001',
        '',
        ' ',
        '"just a string"',
        '42',
        'null',
        '[]',
      ]
      return {
        serviceId: 'joke-service',
        id,
        body: utf8(pick(texts)),
        expect: { type: 'error', errorTypes: BAD_REQUEST },
      }
    },
    'random-bytes': (id) => {
      const bytes = Buffer.alloc(1 + int(64))
      for (let i = 0; i < bytes.length; i++) bytes[i] = int(256)
      bytes[0] = 0xff // never valid UTF-8 (nor a JSON object)
      return { serviceId: 'calculator-service', id, body: bytes, expect: { type: 'error', errorTypes: BAD_REQUEST } }
    },
    'invalid-utf8': (id) => {
      const body = Buffer.concat([
        utf8('{"user": "a'),
        Buffer.from([0xc3, 0x28, 0xa0, 0xa1]),
        utf8('", "config": "{}", "arguments": "{}"}'),
      ])
      return { serviceId: 'joke-service', id, body, expect: { type: 'error', errorTypes: BAD_REQUEST } }
    },
    'config-not-an-object': (id) => {
      const config = pick(['"[1,2]"', '"42"', '"not json"', '7', 'true'])
      const body = utf8(`{"user": "a", "config": ${config}, "arguments": "{\\"topic\\": \\"x\\"}"}`)
      return { serviceId: 'joke-service', id, body, expect: { type: 'error', errorTypes: BAD_REQUEST } }
    },
    'arguments-not-an-object': (id) => {
      const args = pick(['"[]"', '"null"', '"{"', '3.5', 'false'])
      const body = utf8(`{"user": "a", "config": "{}", "arguments": ${args}}`)
      return { serviceId: 'calculator-service', id, body, expect: { type: 'error', errorTypes: BAD_REQUEST } }
    },
    'user-wrong-type': (id) => ({
      serviceId: 'joke-service',
      id,
      body: utf8(
        JSON.stringify({ user: pick([{ name: 'x' }, [1], 12, true]), config: '{}', arguments: '{"topic": "x"}' }),
      ),
      expect: { type: 'error', errorTypes: BAD_REQUEST },
    }),
    'argument-wrong-type': (id) => ({
      serviceId: pick(['joke-service', 'calculator-service']),
      id,
      // Neither tool takes these for a string argument.
      body: request('a', {}, { topic: pick([{}, [1, 2], null]), expression: pick([{}, ['1+1'], null]) }),
      expect: { type: 'error', errorTypes: INVALID },
    }),
    'missing-argument': (id) => ({
      serviceId: 'joke-service',
      id,
      body: request('a', { style: 'pun' }, {}),
      expect: { type: 'error', errorTypes: INVALID },
    }),
    'huge-field': (id) => ({
      serviceId: 'calculator-service',
      id,
      // The calculator refuses an expression this long; nothing else should choke on it.
      body: request('a', {}, { expression: '1+'.repeat(100_000 + int(200_000)) + '1' }),
      expect: { type: 'error', errorTypes: ['tool-service-error'] },
    }),
    'deep-nesting': (id) => {
      const depth = 5_000 + int(50_000)
      const nested = '['.repeat(depth) + ']'.repeat(depth)
      const body = utf8(`{"user": "a", "config": "{}", "arguments": {"topic": "x", "extra": ${nested}}}`)
      return { serviceId: 'joke-service', id, body, expect: { type: 'settled' } }
    },
    'prototype-keys': (id) => {
      const key = pick(['__proto__', 'constructor', 'prototype'])
      const body = utf8(
        `{"user": "a", "config": "{\\"${key}\\": {\\"polluted\\": true}}", "arguments": "{\\"${key}\\": {\\"topic\\": 1}, \\"topic\\": \\"cats\\"}"}`,
      )
      return { serviceId: 'joke-service', id, body, expect: { type: 'settled' } }
    },
    'unknown-tool-config': (id) => ({
      serviceId: 'joke-service',
      id,
      body: request('a', { style: word(), [word()]: word() }, { topic: word() }),
      expect: { type: 'settled' },
    }),
    'control-characters': (id) => ({
      serviceId: 'joke-service',
      id,
      body: request('\u0000\u001b[31m', { style: 'pun' }, { topic: '\u2028\ud83d\ude00\u0007' }),
      expect: { type: 'settled' },
    }),
    'no-id': () => ({
      serviceId: 'calculator-service',
      id: undefined,
      body: request('a', {}, { expression: '1+1' }),
      expect: { type: 'unknown-id' },
    }),
    'empty-id': () => ({
      serviceId: 'calculator-service',
      id: '',
      body: request('a', {}, { expression: '2+2' }),
      expect: { type: 'unknown-id' },
    }),
    'huge-id': (id) => ({
      serviceId: 'joke-service',
      id: id + 'x'.repeat(10_000),
      body: request('a', {}, {}),
      expect: { type: 'error', errorTypes: INVALID },
    }),
  }
  const categories = Object.keys(hostile)
  /** Big messages, kept to about one in a hundred so that the run stays quick. */
  const HEAVY = new Set(['huge-field', 'deep-nesting', 'huge-id'])

  const messages: HostileMessage[] = []
  while (messages.length < count) {
    if (int(5) === 0) {
      messages.push(...(await validRequest()))
      continue
    }
    const category = pick(categories)
    if (HEAVY.has(category) && int(8) !== 0) continue
    messages.push({ category, ...(await hostile[category]!(nextId(category))) })
  }
  return messages.slice(0, count)

  /** A valid request with its known answer; now and then sent twice under one id. */
  async function validRequest(): Promise<HostileMessage[]> {
    const kind = int(3)
    const id = nextId('valid')
    let message: HostileMessage
    if (kind === 0) {
      const user = word()
      const topic = pick(['programming', 'cats', word()])
      message = {
        category: 'valid',
        serviceId: 'joke-service',
        id,
        body: request(user, { style: 'pun' }, { topic }),
        expect: { type: 'answer', text: await oracle.joke(user, topic) },
      }
    } else if (kind === 1) {
      const a = int(1_000_000)
      const b = int(1_000_000)
      message = {
        category: 'valid',
        serviceId: 'calculator-service',
        id,
        body: request(word(), {}, { expression: `${a} + ${b}` }),
        expect: { type: 'answer', text: String(a + b) },
      }
    } else {
      const hero = word()
      const sentences = 1 + int(3)
      message = {
        category: 'valid',
        serviceId: 'story-service',
        id,
        body: request(word(), {}, { hero, sentences: String(sentences) }),
        expect: { type: 'answer', text: await oracle.story(hero, sentences) },
      }
    }
    // A duplicate id: both copies are answered (the bridge does not deduplicate), each in full.
    return int(20) === 0 ? [message, { ...message, category: 'duplicate-id' }] : [message]
  }
}
