/**
 * Dead letters: a request that cannot be answered (its answer cannot be
 * published for a reason that would not pass, or it cannot be decoded and
 * carries no `id`), or one answered with an error of a kind the service
 * chose to keep, goes to a dead-letter queue on the same broker: the original
 * body unchanged, its properties, and why in properties of their own.
 * `toolbridge dead-letters list | replay` read them back (bridge/cli/dead-letter-reader.ts).
 */
import { ERROR_KINDS, type ErrorKind } from '../../shared/errors.ts'
import { decodeRequest } from '../../shared/protocol.ts'
import { parseQueueName, pulsarTopic } from '../../shared/queues.ts'
import type { Properties } from '../transports/transport.ts'

/** Every property the bridge adds starts with this; the rest are the request's own. */
export const DEAD_LETTER_PREFIX = 'toolbridge-dead-letter-'

const FIELDS = ['id', 'kind', 'message', 'service', 'queue', 'time', 'attempts'] as const

export interface DeadLetterReason {
  kind: ErrorKind
  message: string
  /** The tool service whose request it was. */
  service: string
  /** The request queue it came from, and where a replay sends it. */
  queue: string
  /** Deliveries of it this bridge has seen, this one included. */
  attempts: number
}

export interface DeadLetter extends DeadLetterReason {
  /** Names this dead letter for `replay --id`. */
  id: string
  /** When it was written, ISO 8601. */
  time: string
  /** The request as it came: body and properties. */
  body: Uint8Array
  properties: Properties
  /** How its properties differ from what the bridge writes (a message someone else put in the queue); empty if not. */
  oddities: string[]
}

/** The message written to the dead-letter queue: the body as it came, the request's properties and the reason's. */
export function deadLetterMessage(
  request: { body: Uint8Array; properties: Properties },
  reason: DeadLetterReason,
  id: string,
  now: Date,
): { body: Uint8Array; properties: Properties } {
  const own: Record<(typeof FIELDS)[number], string> = {
    id,
    kind: reason.kind,
    message: reason.message,
    service: reason.service,
    queue: reason.queue,
    time: now.toISOString(),
    attempts: String(reason.attempts),
  }
  const properties: Properties = {}
  for (const [name, value] of Object.entries(request.properties)) {
    if (!name.startsWith(DEAD_LETTER_PREFIX)) properties[name] = value
  }
  for (const field of FIELDS) properties[DEAD_LETTER_PREFIX + field] = own[field]
  return { body: request.body, properties }
}

export type ReadDeadLetter = { ok: true; deadLetter: DeadLetter } | { ok: false; message: string }

/** A message of a dead-letter queue read back; a message that is not one is said to be so. */
export function readDeadLetter(body: Uint8Array, properties: Properties): ReadDeadLetter {
  const missing = FIELDS.filter((field) => properties[DEAD_LETTER_PREFIX + field] === undefined)
  if (missing.length > 0)
    return { ok: false, message: `not a dead letter: no ${missing.map((f) => DEAD_LETTER_PREFIX + f).join(', ')}` }
  const field = (name: (typeof FIELDS)[number]) => properties[DEAD_LETTER_PREFIX + name]!
  const kind = field('kind')
  const attempts = Number(field('attempts'))
  const own: Properties = {}
  for (const [name, value] of Object.entries(properties)) if (!name.startsWith(DEAD_LETTER_PREFIX)) own[name] = value
  const oddities: string[] = []
  if (!UUID.test(field('id'))) oddities.push(`its id "${field('id')}" is not a UUID`)
  if (!(ERROR_KINDS as readonly string[]).includes(kind)) oddities.push(`its kind "${kind}" is no error kind`)
  if (!Number.isInteger(attempts) || attempts < 1) oddities.push(`its attempts "${field('attempts')}" are no count`)
  if (!isIsoTime(field('time'))) oddities.push(`its time "${field('time')}" is not ISO 8601`)
  return {
    ok: true,
    deadLetter: {
      id: field('id'),
      kind: (ERROR_KINDS as readonly string[]).includes(kind) ? (kind as ErrorKind) : 'crash',
      message: field('message'),
      service: field('service'),
      queue: field('queue'),
      time: field('time'),
      attempts: Number.isInteger(attempts) ? attempts : 0,
      body,
      properties: own,
      oddities,
    },
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

function isIsoTime(text: string): boolean {
  const time = new Date(text)
  return !Number.isNaN(time.getTime()) && time.toISOString() === text
}

/**
 * Where `replay` may send dead letters. A dead letter names its request queue
 * and its service in properties anyone who can publish to the dead-letter
 * queue can write, so the queue it names is believed only when it is the
 * request queue of a tool service the project declares, of that same service;
 * an operator may name another with `--to`, never a response queue (a
 * replayed "request" there would be a forged answer for a waiting caller).
 */
export interface ReplayTargets {
  /** Each declared tool service's request queue (by its Pulsar spelling, so that either spelling matches) and its id. */
  requestQueues: ReadonlyMap<string, string>
  /** The declared services' response queues, by their Pulsar spelling. */
  responseQueues: ReadonlySet<string>
  /** `--to`: the queue every dead letter replayed goes to, whatever it names. */
  to?: string | undefined
}

const spelled = (queue: string) => pulsarTopic(parseQueueName(queue))

export function replayTargets(
  services: readonly { id: string; requestQueue: string; responseQueue: string }[],
  to?: string,
): ReplayTargets {
  return {
    requestQueues: new Map(services.map((s) => [spelled(s.requestQueue), s.id])),
    responseQueues: new Set(services.map((s) => spelled(s.responseQueue))),
    to,
  }
}

export type ReplayTarget =
  /** `service`: the declared tool service that reads `queue`; undefined for a queue named with --to. */
  { ok: true; queue: string; service?: string } | { ok: false; problem: string }

/** The queue a dead letter would be replayed to, or why it may not be. */
export function replayTarget(deadLetter: DeadLetter, targets: ReplayTargets): ReplayTarget {
  const queue = targets.to ?? deadLetter.queue
  let name: ReturnType<typeof parseQueueName>
  try {
    name = parseQueueName(queue)
  } catch (err) {
    return { ok: false, problem: `its queue "${queue}" is not a queue name: ${(err as Error).message}` }
  }
  if (name.cls === 'response' || targets.responseQueues.has(pulsarTopic(name))) {
    return { ok: false, problem: `"${queue}" is a response queue: replay sends requests only` }
  }
  if (targets.to !== undefined) return { ok: true, queue }
  const service = targets.requestQueues.get(pulsarTopic(name))
  if (service === undefined) {
    return {
      ok: false,
      problem: `"${queue}" is not the request queue of a tool service serverless.yml declares (--to <queue> sends it elsewhere)`,
    }
  }
  if (service !== deadLetter.service) {
    return {
      ok: false,
      problem: `it names service "${deadLetter.service}", but "${queue}" is the request queue of "${service}"`,
    }
  }
  return { ok: true, queue, service }
}

/**
 * Where a dead letter is replayed to, or why it is not: its properties must
 * be as the bridge writes them, its target allowed (replayTarget) and its
 * body a request the bridge decodes (one that never was stays in the queue
 * for a person to read).
 */
export function replayPlan(deadLetter: DeadLetter, targets: ReplayTargets): ReplayTarget {
  if (deadLetter.oddities.length > 0) {
    return { ok: false, problem: `not as toolbridge writes dead letters: ${deadLetter.oddities.join('; ')}` }
  }
  const target = replayTarget(deadLetter, targets)
  if (!target.ok) return target
  const decoded = decodeRequest(deadLetter.body)
  return decoded.ok ? target : { ok: false, problem: `its body is not a request: ${decoded.message}` }
}
