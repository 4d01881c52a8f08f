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
import { parseQueueName } from '../../shared/queues.ts'
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
    },
  }
}

/**
 * Why a dead letter cannot be replayed as it is, or undefined when it can:
 * its queue must be a queue name and its body a request the bridge decodes
 * (one that never was stays in the queue for a person to read).
 */
export function replayProblem(deadLetter: DeadLetter): string | undefined {
  try {
    parseQueueName(deadLetter.queue)
  } catch (err) {
    return `its queue "${deadLetter.queue}" is not a queue name: ${(err as Error).message}`
  }
  const decoded = decodeRequest(deadLetter.body)
  return decoded.ok ? undefined : `its body is not a request: ${decoded.message}`
}
