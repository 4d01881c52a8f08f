/**
 * One error tree for the whole project. Every failure that can end a request
 * has a `kind`; `shared/protocol.ts` maps kinds to the wire `error.type`.
 */
export const ERROR_KINDS = [
  'bad-request', // body is not a decodable ToolServiceRequest
  'missing-config', // a required config param is absent
  'invalid-arguments', // arguments do not match the tool's declaration
  'too-large', // request or response over a size limit
  'function-error', // the function threw or returned an error
  'timeout', // the function ran past its timeout
  'crash', // the function's execution environment died
  'unavailable', // the bridge could not reach the function or the broker
  'expired', // the request waited longer than its service's maxAge: not invoked
  'config', // serverless.yml or flags are wrong (never on the wire)
] as const

export type ErrorKind = (typeof ERROR_KINDS)[number]

export class ToolbridgeError extends Error {
  readonly kind: ErrorKind
  /** Whether trying again later could succeed (reconnects, throttling). */
  readonly retriable: boolean

  constructor(kind: ErrorKind, message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ToolbridgeError'
    this.kind = kind
    this.retriable = options.retriable ?? false
  }
}

/** serverless.yml, a flag or an environment variable is wrong; the message names which. */
export class ConfigError extends ToolbridgeError {
  constructor(path: string, message: string) {
    super('config', `${path}: ${message}`)
    this.name = 'ConfigError'
  }
}

/**
 * A flag, or the environment variable that stands for it, has a value the
 * command cannot use: a usage error, like an unknown flag.
 */
export class UsageError extends ConfigError {
  constructor(flag: string, message: string) {
    super(flag, message)
    this.name = 'UsageError'
  }
}

/** A refusal or failure as data: what every pipeline step returns instead of throwing. */
export interface Refusal {
  ok: false
  kind: ErrorKind
  message: string
}

/** The message of anything thrown: an Error's own, else the value as text. */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err))

export const isToolbridgeError = (value: unknown): value is ToolbridgeError => value instanceof ToolbridgeError

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
