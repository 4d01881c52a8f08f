/**
 * One TCP (or TLS) connection to a broker or proxy: the CONNECT handshake,
 * keep-alive pings, requests matched to answers by request id with a
 * timeout, and the producers and consumers registered on it. When it goes,
 * everything waiting on it fails with ConnectionClosed and every producer
 * and consumer hears `connectionLost()`; reconnecting is their business.
 */
import { connect as netConnect, type Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import { PulsarError, PulsarServerError } from './errors.ts'
import { FrameDecoder, parseFrame, simpleFrame, type MessagePart } from './frame.ts'
import { decodeCommand, encodeCommand, type Command, type CommandName, type Incoming } from './proto.ts'

/** Protocol version 19: broker entry metadata and topic migration (v20) stay off. */
export const PROTOCOL_VERSION = 19
export const CLIENT_VERSION = 'toolbridge-pulsar-ts/0.1'
/** The broker's default maxMessageSize; CONNECTED says if it differs. */
export const DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024

export interface TlsSettings {
  /** PEM CA certificates; undefined: Node's own list. */
  ca?: string | Buffer
  /** Check the certificate's names against the host (off by default, as in Pulsar's clients). */
  validateHostname: boolean
  /** Accept any certificate. */
  allowInsecure: boolean
}

export interface Authentication {
  method: string
  /** Read on every connect and auth challenge, so a refreshed token is picked up. */
  data(): string | Promise<string>
}

export interface ConnectionLogger {
  debug(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
}

export interface ConnectionOptions {
  /** The broker this connection is for (`pulsar://host:port`). */
  logicalAddress: string
  /** Where the socket goes: the broker itself, or the service URL (a proxy) when lookups say so. */
  physicalAddress: string
  tls: TlsSettings | undefined
  auth: Authentication | undefined
  connectTimeoutMs: number
  operationTimeoutMs: number
  keepAliveMs: number
  logger: ConnectionLogger
}

export interface ProducerListener {
  receipt(command: Incoming['send_receipt']): void
  sendError(command: Incoming['send_error']): void
  /** The broker closed the producer (topic unloaded, moved): look it up again. */
  closedByBroker(): void
  connectionLost(): void
}

export interface ConsumerListener {
  message(command: Incoming['message'], part: MessagePart): void
  closedByBroker(): void
  connectionLost(): void
}

type Answer = Exclude<Command, { type: 'unknown' }>

interface Pending {
  what: string
  resolve(answer: Answer): void
  reject(error: Error): void
  timer: NodeJS.Timeout
}

const RESPONSES = new Set<string>([
  'success',
  'error',
  'producer_success',
  'lookup_response',
  'partitioned_metadata_response',
])

function hostPort(address: string): { host: string; port: number; tls: boolean } {
  const url = new URL(address)
  const tls = url.protocol === 'pulsar+ssl:'
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) || (tls ? 6651 : 6650), tls }
}

export class Connection {
  readonly options: ConnectionOptions
  serverVersion = ''
  maxMessageSize = DEFAULT_MAX_MESSAGE_SIZE
  closed = false

  private readonly socket: Socket
  private readonly decoder = new FrameDecoder(64 * 1024 * 1024)
  private readonly pending = new Map<number, Pending>()
  private readonly producers = new Map<number, ProducerListener>()
  private readonly consumers = new Map<number, ConsumerListener>()
  private readonly closeListeners: ((error: PulsarError) => void)[] = []
  private nextRequestId = 1
  private receivedSinceTick = true
  private pingOutstanding = false
  private corked = false
  private keepAlive: NodeJS.Timeout | undefined
  private handshake: { resolve(): void; reject(error: Error): void } | undefined

  private constructor(options: ConnectionOptions, socket: Socket) {
    this.options = options
    this.socket = socket
  }

  /** Connects, handshakes and resolves once the broker has said CONNECTED. */
  static open(options: ConnectionOptions): Promise<Connection> {
    const target = hostPort(options.physicalAddress)
    const tls = options.tls
    if (target.tls && !tls)
      throw new PulsarError('ConnectError', `${options.physicalAddress} needs TLS settings`, { retriable: false })
    const socket = target.tls
      ? tlsConnect({
          host: target.host,
          port: target.port,
          servername: /^[\d.:]+$/.test(target.host) ? undefined : target.host,
          ca: tls!.ca,
          rejectUnauthorized: !tls!.allowInsecure,
          // Node checks the name by default; Pulsar's clients do not unless asked.
          ...(tls!.validateHostname ? {} : { checkServerIdentity: () => undefined }),
        })
      : netConnect({ host: target.host, port: target.port })
    socket.setNoDelay(true)
    const connection = new Connection(options, socket)
    return connection.start(target.tls)
  }

  private start(tls: boolean): Promise<Connection> {
    const { options } = this
    return new Promise<Connection>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fail(
          new PulsarError(
            'Timeout',
            `no CONNECTED from ${options.physicalAddress} within ${options.connectTimeoutMs} ms`,
            { retriable: true },
          ),
        )
      }, options.connectTimeoutMs)
      this.handshake = {
        resolve: () => {
          clearTimeout(timer)
          this.handshake = undefined
          this.startKeepAlive()
          resolve(this)
        },
        reject: (error) => {
          clearTimeout(timer)
          this.handshake = undefined
          reject(error)
        },
      }
      this.socket.once(tls ? 'secureConnect' : 'connect', () => {
        this.sendConnect().catch((err: unknown) => this.fail(err as Error))
      })
      this.socket.on('data', (chunk: Buffer) => this.received(chunk))
      this.socket.on('error', (err: NodeJS.ErrnoException) => {
        const connecting = this.handshake !== undefined
        this.fail(
          new PulsarError(
            connecting ? 'ConnectError' : 'ConnectionClosed',
            `${options.physicalAddress}: ${err.message}`,
            {
              // A certificate that does not check out fails the same way next time.
              retriable: !/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(err.code ?? ''),
              cause: err,
            },
          ),
        )
      })
      this.socket.on('close', () =>
        this.fail(
          new PulsarError('ConnectionClosed', `${options.physicalAddress} closed the connection`, { retriable: true }),
        ),
      )
    })
  }

  private async sendConnect(): Promise<void> {
    const { auth, logicalAddress, physicalAddress } = this.options
    const authData = auth ? Buffer.from(await auth.data(), 'utf8') : undefined
    const { host, port } = hostPort(logicalAddress)
    this.write('connect', {
      client_version: CLIENT_VERSION,
      protocol_version: PROTOCOL_VERSION,
      auth_method_name: auth?.method,
      auth_data: authData,
      // Through a proxy, name the broker the lookup chose.
      proxy_to_broker_url: logicalAddress === physicalAddress ? undefined : `${host}:${port}`,
      feature_flags: { supports_auth_refresh: true },
    })
  }

  /** Sends a command that expects no answer. */
  write(name: CommandName, fields: object): void {
    this.writeFrame(simpleFrame(encodeCommand(name, fields)))
  }

  /**
   * Sends bytes already framed (messages). Frames written in one turn of the event loop leave in one
   * system call (acks, sends, flows): also those written by callbacks of one phase, such as the answers
   * of several worker threads read together, which a flush at the end of each tick would send one by
   * one (and the broker would read one by one).
   */
  writeFrame(frame: Buffer): void {
    if (this.closed) return
    if (!this.corked) {
      this.corked = true
      this.socket.cork()
      setImmediate(() => {
        this.corked = false
        this.socket.uncork()
      })
    }
    this.socket.write(frame)
  }

  /** Sends a command with a fresh request_id; resolves with the answer, rejects on ERROR, timeout or close. */
  request(name: CommandName, fields: object, what: string): Promise<Answer> {
    if (this.closed)
      return Promise.reject(
        new PulsarError('ConnectionClosed', `${what}: the connection is closed`, { retriable: true }),
      )
    const requestId = this.nextRequestId++
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(requestId)
        reject(
          new PulsarError(
            'Timeout',
            `${what}: no answer from ${this.options.logicalAddress} within ${this.options.operationTimeoutMs} ms`,
            { retriable: true },
          ),
        )
      }, this.options.operationTimeoutMs)
      this.pending.set(requestId, { what, resolve, reject, timer })
      this.write(name, { ...fields, request_id: requestId })
    })
  }

  addProducer(id: number, listener: ProducerListener): void {
    this.producers.set(id, listener)
  }

  removeProducer(id: number): void {
    this.producers.delete(id)
  }

  addConsumer(id: number, listener: ConsumerListener): void {
    this.consumers.set(id, listener)
  }

  removeConsumer(id: number): void {
    this.consumers.delete(id)
  }

  /** Called once, when the connection goes for any reason. */
  onClose(listener: (error: PulsarError) => void): void {
    this.closeListeners.push(listener)
  }

  close(): void {
    this.fail(
      new PulsarError('AlreadyClosed', `connection to ${this.options.physicalAddress} closed by the client`, {
        retriable: false,
      }),
    )
  }

  // ---------------------------------------------------------------- reading

  private received(chunk: Buffer): void {
    this.receivedSinceTick = true
    this.pingOutstanding = false
    let frames: Buffer[]
    try {
      frames = this.decoder.push(chunk)
    } catch (err) {
      this.fail(err as Error)
      return
    }
    for (const frame of frames) {
      try {
        const { command, message } = parseFrame(frame)
        this.dispatch(decodeCommand(command), message)
      } catch (err) {
        this.fail(
          new PulsarError(
            'ProtocolError',
            `${this.options.physicalAddress}: unreadable frame: ${(err as Error).message}`,
            { retriable: true, cause: err },
          ),
        )
        return
      }
    }
  }

  private dispatch(command: Command, message: MessagePart | undefined): void {
    switch (command.type) {
      case 'message':
        if (message) this.consumers.get(command.body.consumer_id)?.message(command.body, message)
        return
      case 'send_receipt':
        this.producers.get(command.body.producer_id)?.receipt(command.body)
        return
      case 'send_error':
        this.producers.get(command.body.producer_id)?.sendError(command.body)
        return
      case 'connected':
        this.serverVersion = command.body.server_version
        if (command.body.max_message_size) this.maxMessageSize = command.body.max_message_size
        this.handshake?.resolve()
        return
      case 'ping':
        this.write('pong', {})
        return
      case 'pong':
        return
      case 'close_producer': {
        const listener = this.producers.get(command.body.producer_id)
        this.producers.delete(command.body.producer_id)
        listener?.closedByBroker()
        return
      }
      case 'close_consumer': {
        const listener = this.consumers.get(command.body.consumer_id)
        this.consumers.delete(command.body.consumer_id)
        listener?.closedByBroker()
        return
      }
      case 'topic_migrated': {
        const id = command.body.resource_id
        const listener = command.body.resource_type === 0 ? this.producers.get(id) : this.consumers.get(id)
        if (command.body.resource_type === 0) this.producers.delete(id)
        else this.consumers.delete(id)
        listener?.closedByBroker()
        return
      }
      case 'auth_challenge':
        void this.answerChallenge()
        return
      case 'error':
        if (this.handshake) {
          this.fail(new PulsarServerError(command.body.error, command.body.message))
          return
        }
        this.settle(command)
        return
      case 'unknown':
        this.options.logger.debug('pulsar: ignored a command this client does not handle', { type: command.typeNumber })
        return
      default:
        if (RESPONSES.has(command.type)) this.settle(command)
    }
  }

  private settle(command: Answer): void {
    const requestId = (command.body as { request_id?: number }).request_id
    if (requestId === undefined) return
    const pending = this.pending.get(requestId)
    if (!pending) return
    // A producer that waits for exclusive access gets its final answer later.
    if (command.type === 'producer_success' && command.body.producer_ready === false) return
    this.pending.delete(requestId)
    clearTimeout(pending.timer)
    if (command.type === 'error')
      pending.reject(new PulsarServerError(command.body.error, `${pending.what}: ${command.body.message}`))
    else pending.resolve(command)
  }

  private async answerChallenge(): Promise<void> {
    const { auth } = this.options
    if (!auth) return
    try {
      const data = Buffer.from(await auth.data(), 'utf8')
      this.write('auth_response', {
        client_version: CLIENT_VERSION,
        protocol_version: PROTOCOL_VERSION,
        response: { auth_method_name: auth.method, auth_data: data },
      })
    } catch (err) {
      this.fail(
        new PulsarError('ConnectError', `cannot answer the broker's auth challenge: ${(err as Error).message}`, {
          retriable: true,
          cause: err,
        }),
      )
    }
  }

  // ---------------------------------------------------------------- liveness and closing

  /** Pings when the line is quiet; a ping left unanswered for a whole interval means the broker is gone. */
  private startKeepAlive(): void {
    this.keepAlive = setInterval(() => {
      if (this.receivedSinceTick) {
        this.receivedSinceTick = false
        return
      }
      if (this.pingOutstanding) {
        this.fail(
          new PulsarError(
            'ConnectionClosed',
            `${this.options.physicalAddress} did not answer a ping within ${this.options.keepAliveMs} ms`,
            { retriable: true },
          ),
        )
        return
      }
      this.pingOutstanding = true
      this.write('ping', {})
    }, this.options.keepAliveMs)
    this.keepAlive.unref()
  }

  private fail(error: Error): void {
    if (this.closed) return
    this.closed = true
    clearInterval(this.keepAlive)
    this.socket.destroy()
    const reason =
      error instanceof PulsarError
        ? error
        : new PulsarError('ConnectionClosed', `${this.options.physicalAddress}: ${error.message}`, {
            retriable: true,
            cause: error,
          })
    this.handshake?.reject(reason)
    for (const pending of this.pending.values()) {
      clearTimeout(pending.timer)
      pending.reject(
        new PulsarError(
          reason.code === 'AlreadyClosed' ? 'AlreadyClosed' : 'ConnectionClosed',
          `${pending.what}: ${reason.message}`,
          { retriable: reason.retriable, cause: reason },
        ),
      )
    }
    this.pending.clear()
    const producers = [...this.producers.values()]
    const consumers = [...this.consumers.values()]
    this.producers.clear()
    this.consumers.clear()
    for (const listener of this.closeListeners) listener(reason)
    for (const p of producers) p.connectionLost()
    for (const c of consumers) c.connectionLost()
  }
}
