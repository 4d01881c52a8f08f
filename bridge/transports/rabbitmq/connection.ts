/**
 * The AMQP connection under the RabbitMQ transport: connecting, and when the
 * connection drops (broker restart, network) reconnecting with backoff
 * (`bridge/support/retry.ts`). A new connection counts as connected only once
 * `prepare` has set it up again (the publishing channel, every consumer), so
 * nobody publishes or consumes on a half-restored connection; callers who
 * come meanwhile wait for it, up to a deadline.
 *
 * `noDelay` (without it a round trip costs ~45 ms), heartbeats every 10 s.
 * amqplib 2 has a `recovery` option of its own; it is not used because the
 * bridge needs what it does not give: a wrong password must fail at once
 * rather than be retried forever, callers must wait a bounded time, and a
 * publish cut off before its confirm must be sent again on the next
 * connection.
 */
import { connect as amqpConnect } from 'amqplib'
import type { ChannelModel, ConfirmChannel, SocketOptions } from 'amqplib'
import { ToolbridgeError } from '../../../shared/errors.ts'
import type { Logger } from '../../support/logger.ts'
import { RetriesExhaustedError, type Retrier } from '../../support/retry.ts'
import { closedError } from '../adapter-parts.ts'
import { coalesceWrites } from './coalesce-writes.ts'

const CONNECT_TIMEOUT_MS = 10_000

/** One live AMQP connection and what was set up on it. */
export class Session {
  readonly model: ChannelModel
  alive = true
  publisher: ConfirmChannel | undefined
  publisherOpening: Promise<ConfirmChannel> | undefined
  /** Exchanges being declared for publishing on this connection. */
  readonly exchanges = new Map<string, Promise<void>>()
  /** Those already declared: publishing to them needs no await (the per-message path). */
  readonly declared = new Set<string>()

  constructor(model: ChannelModel) {
    this.model = model
  }
}

interface Waiter {
  resolve(session: Session): void
  reject(error: Error): void
  timer: NodeJS.Timeout
}

/** A wrong password or vhost, or a certificate that does not check out: retrying cannot help. */
function refusal(err: unknown, message: string): string | undefined {
  if (/ACCESS[-_]REFUSED|NOT[-_]ALLOWED|\b403\b|\b530\b/.test(message)) return 'the broker refused the login'
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? ''
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code)) return "the broker's TLS certificate was not accepted"
  return undefined
}

export interface RabbitConnectionOptions {
  /** What amqplib connects to, and the TLS settings from the URL. */
  url: string
  tls: SocketOptions
  /** The broker URL with the password removed. */
  address: string
  /** An error's text without the password. */
  scrub: (err: unknown) => string
  logger: Logger
  connectRetry: Retrier
  reconnectRetry: Retrier
  /** How long callers wait for a connection while reconnecting. */
  waitForConnectionMs: number
  /** Called each time a lost connection is back, consumers restored (metrics). */
  onReconnect: (() => void) | undefined
  /** Sets up a new connection before it counts as connected; fails the attempt if it throws. */
  prepare(session: Session): Promise<void>
}

export class RabbitConnection {
  private readonly options: RabbitConnectionOptions
  private readonly socketOptions: SocketOptions
  private readonly aborter = new AbortController()
  private current: Session | undefined
  /** The first connection or a reconnection, while under way. */
  private establishing: Promise<Session> | undefined
  private isClosed = false
  private readonly waiters = new Set<Waiter>()

  constructor(options: RabbitConnectionOptions) {
    this.options = options
    this.socketOptions = {
      ...options.tls,
      noDelay: true,
      timeout: CONNECT_TIMEOUT_MS,
      clientProperties: { connection_name: 'toolbridge' },
    }
  }

  /** The connection in use, with everything restored on it; undefined while (re)connecting or closed. */
  get session(): Session | undefined {
    return this.current
  }

  get closed(): boolean {
    return this.isClosed
  }

  /** Connected, with every consumer restored (a session becomes current only then). */
  get ready(): boolean {
    return this.current !== undefined && this.current.alive
  }

  closedError(): ToolbridgeError {
    return closedError('RabbitMQ', this.options.address)
  }

  async connect(): Promise<void> {
    if (this.isClosed) throw this.closedError()
    if (this.current) return
    if (!this.establishing) this.establish(true)
    await this.establishing
  }

  /** The current session, or the next one within the deadline. */
  waitForSession(deadline: number): Promise<Session> {
    if (this.current) return Promise.resolve(this.current)
    if (this.isClosed) return Promise.reject(this.closedError())
    const { address, waitForConnectionMs } = this.options
    if (!this.establishing) {
      return Promise.reject(new ToolbridgeError('unavailable', `${address}: not connected`, { retriable: true }))
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(
          () => {
            this.waiters.delete(waiter)
            reject(
              new ToolbridgeError(
                'unavailable',
                `no connection to RabbitMQ at ${address} within ${waitForConnectionMs} ms`,
                {
                  retriable: true,
                },
              ),
            )
          },
          Math.max(0, deadline - Date.now()),
        ),
      }
      this.waiters.add(waiter)
    })
  }

  /** Stops reconnecting, fails every waiter, and closes the connection: unacked deliveries go back to their queues. */
  async close(): Promise<void> {
    if (this.isClosed) return
    this.isClosed = true
    this.aborter.abort(this.closedError())
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer)
      waiter.reject(this.closedError())
    }
    this.waiters.clear()
    const session = this.current
    this.current = undefined
    if (session) {
      session.alive = false
      await session.model.close().catch(() => {})
    }
  }

  /** Connects (first time) or reconnects, with backoff, then makes the new session current. */
  private establish(initial: boolean): void {
    const { address, scrub, logger } = this.options
    const started = Date.now()
    const retry = initial ? this.options.connectRetry : this.options.reconnectRetry
    const attempt = retry(
      async (bail) => {
        if (this.isClosed) bail(this.closedError())
        try {
          return await this.open()
        } catch (err) {
          const message = scrub(err)
          const refused = initial ? refusal(err, message) : undefined
          if (refused) bail(new ToolbridgeError('config', `${address}: ${refused}: ${message}`))
          throw err
        }
      },
      {
        signal: this.aborter.signal,
        onRetry: (err, retryCount, retryTime) =>
          logger.warn(
            { broker: address, retry: retryCount + 1, inMs: retryTime, err: scrub(err) },
            initial ? 'cannot connect to RabbitMQ; retrying' : 'cannot reconnect to RabbitMQ; retrying',
          ),
      },
    )
    this.establishing = attempt.then(
      (session) => {
        this.establishing = undefined
        if (this.isClosed) {
          session.model.close().catch(() => {})
          throw this.closedError()
        }
        if (!session.alive) {
          // It closed between open() and here, while not yet current, so nobody else noticed: go again.
          this.establish(false)
          return this.establishing!
        }
        this.current = session
        for (const waiter of this.waiters) {
          clearTimeout(waiter.timer)
          waiter.resolve(session)
        }
        this.waiters.clear()
        if (!initial) {
          logger.info({ broker: address, afterMs: Date.now() - started }, 'reconnected to RabbitMQ')
          this.options.onReconnect?.()
        }
        return session
      },
      (err: unknown) => {
        this.establishing = undefined
        const error =
          err instanceof ToolbridgeError && !(err instanceof RetriesExhaustedError)
            ? err
            : new ToolbridgeError('unavailable', `cannot connect to RabbitMQ at ${address}: ${scrub(err)}`, {
                retriable: true,
              })
        for (const waiter of this.waiters) {
          clearTimeout(waiter.timer)
          waiter.reject(error)
        }
        this.waiters.clear()
        if (!this.isClosed && !initial)
          logger.error({ broker: address, err: error.message }, 'gave up reconnecting to RabbitMQ')
        throw error
      },
    )
    if (!initial) this.establishing.catch(() => {}) // reported above; waiters got the error
  }

  /** One connection attempt: connect, then set it up (prepare). */
  private async open(): Promise<Session> {
    const { address, scrub, logger } = this.options
    const model = await amqpConnect(this.options.url, this.socketOptions)
    coalesceWrites(model)
    const session = new Session(model)
    model.on('error', (err: Error) => logger.warn({ broker: address, err: scrub(err) }, 'RabbitMQ connection error'))
    model.on('close', () => this.lost(session))
    model.on('blocked', (reason: string) => logger.warn({ broker: address, reason }, 'RabbitMQ blocked publishing'))
    model.on('unblocked', () => logger.info({ broker: address }, 'RabbitMQ unblocked publishing'))
    try {
      await this.options.prepare(session)
      if (!session.alive) throw new Error('the connection closed while consumers were being restored')
      if (this.isClosed) throw this.closedError()
      return session
    } catch (err) {
      session.alive = false
      await model.close().catch(() => {})
      throw err
    }
  }

  /** The connection closed: unless we closed it, reconnect. */
  private lost(session: Session): void {
    session.alive = false
    if (this.current !== session) return // not yet current: open() fails and its retrier tries again
    this.current = undefined
    if (this.isClosed) return
    this.options.logger.warn({ broker: this.options.address }, 'lost the RabbitMQ connection; reconnecting')
    this.establish(false)
  }
}
