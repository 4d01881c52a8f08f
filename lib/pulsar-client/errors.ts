/**
 * The client's errors. Every one is a PulsarError with a `code` and a
 * `retriable` flag: the broker's own ServerError name (PulsarApi.proto) for
 * refusals, or a client-side code for what happened on this side.
 */

/** ServerError of the Pulsar binary protocol, by its wire number. */
export const SERVER_ERRORS = [
  'UnknownError',
  'MetadataError',
  'PersistenceError',
  'AuthenticationError',
  'AuthorizationError',
  'ConsumerBusy',
  'ServiceNotReady',
  'ProducerBlockedQuotaExceededError',
  'ProducerBlockedQuotaExceededException',
  'ChecksumError',
  'UnsupportedVersionError',
  'TopicNotFound',
  'SubscriptionNotFound',
  'ConsumerNotFound',
  'TooManyRequests',
  'TopicTerminatedError',
  'ProducerBusy',
  'InvalidTopicName',
  'IncompatibleSchema',
  'ConsumerAssignError',
  'TransactionCoordinatorNotFound',
  'InvalidTxnStatus',
  'NotAllowedError',
  'TransactionConflict',
  'TransactionNotFound',
  'ProducerFenced',
] as const

export type ServerErrorName = (typeof SERVER_ERRORS)[number] | `ServerError${number}`

/** Refusals that come back the same however often the client asks again. */
const FINAL_SERVER_ERRORS = new Set<string>([
  'AuthenticationError',
  'AuthorizationError',
  'UnsupportedVersionError',
  'TopicNotFound',
  'SubscriptionNotFound',
  'TopicTerminatedError',
  'InvalidTopicName',
  'IncompatibleSchema',
  'NotAllowedError',
  'ProducerFenced',
  'ProducerBlockedQuotaExceededError',
])

export const CLIENT_ERROR_CODES = [
  'ConnectError', // the socket or TLS handshake failed
  'ConnectionClosed', // the connection went while the operation waited
  'Timeout', // no answer within the operation timeout
  'ProtocolError', // the peer sent something this client cannot read
  'TooManyRedirects', // lookup kept redirecting
  'MessageTooBig', // over the broker's max_message_size
  'AlreadyClosed', // the client, producer or consumer was closed
  'Unsupported', // a feature this client does not have (partitioned topics, ...)
] as const

export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number]

export class PulsarError extends Error {
  readonly code: ServerErrorName | ClientErrorCode
  readonly retriable: boolean

  constructor(
    code: ServerErrorName | ClientErrorCode,
    message: string,
    options: { retriable: boolean; cause?: unknown },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'PulsarError'
    this.code = code
    this.retriable = options.retriable
  }
}

/** The broker refused a command: its ServerError and message. */
export class PulsarServerError extends PulsarError {
  /** The wire number of the ServerError. */
  readonly serverCode: number

  constructor(serverCode: number, message: string) {
    const code: ServerErrorName = SERVER_ERRORS[serverCode] ?? `ServerError${serverCode}`
    super(code, `${code}: ${message}`, { retriable: !FINAL_SERVER_ERRORS.has(code) })
    this.name = 'PulsarServerError'
    this.serverCode = serverCode
  }
}

export const isPulsarError = (value: unknown): value is PulsarError => value instanceof PulsarError
