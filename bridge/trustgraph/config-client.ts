/**
 * A client of TrustGraph's configuration service over any transport, like
 * TrustGraph's own ConfigClient: one private subscription to
 * `response:tg:config`, requests on `request:tg:config` under a fresh `id`,
 * the answer with that id resolving the call.
 */
import { randomUUID } from 'node:crypto'
import {
  CONFIG_REQUEST_QUEUE,
  CONFIG_RESPONSE_QUEUE,
  configRequest,
  decodeConfigResponse,
  encodeConfigRequest,
  type ConfigKey,
  type ConfigOperation,
  type ConfigRequest,
  type ConfigResponse,
  type ConfigValue,
} from '../../shared/config-protocol.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import { ID_PROPERTY } from '../../shared/protocol.ts'
import type { Consumer, Transport } from '../transports/transport.ts'

/** TrustGraph's own default for config calls (`--config-timeout`) is 60 s. */
export const DEFAULT_CONFIG_TIMEOUT_MS = 60_000

/** The configuration service answered with an error. */
export class ConfigServiceError extends ToolbridgeError {
  readonly type: string
  constructor(type: string, message: string) {
    super('config', `configuration service refused: ${type}: ${message}`)
    this.name = 'ConfigServiceError'
    this.type = type
  }
}

export class ConfigClient {
  private readonly transport: Transport
  private readonly timeoutMs: number
  private readonly pending = new Map<string, { resolve(r: ConfigResponse): void; reject(e: Error): void }>()
  private consumer: Consumer | undefined

  constructor(transport: Transport, options: { timeoutMs?: number } = {}) {
    this.transport = transport
    this.timeoutMs = options.timeoutMs ?? DEFAULT_CONFIG_TIMEOUT_MS
  }

  /** Subscribes to the response queue; must resolve before the first request. */
  async start(): Promise<void> {
    this.consumer = await this.transport.subscribe(CONFIG_RESPONSE_QUEUE, (delivery) => {
      delivery.ack()
      const id = delivery.properties[ID_PROPERTY]
      const call = id === undefined ? undefined : this.pending.get(id)
      if (!call) return // another client's answer
      this.pending.delete(id!)
      const decoded = decodeConfigResponse(delivery.body)
      if (!decoded.ok) call.reject(new ToolbridgeError('bad-request', `unreadable ConfigResponse: ${decoded.message}`))
      else call.resolve(decoded.value)
    })
  }

  /** Sends one ConfigRequest; resolves with the answer, or rejects with ConfigServiceError if it carries an error. */
  request(fields: Partial<ConfigRequest> & { operation: ConfigOperation }): Promise<ConfigResponse> {
    const id = randomUUID()
    return new Promise<ConfigResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(
          new ToolbridgeError(
            'unavailable',
            `no answer from TrustGraph's configuration service on ${CONFIG_RESPONSE_QUEUE} within ${this.timeoutMs / 1000} s: is it running on this broker?`,
            { retriable: true },
          ),
        )
      }, this.timeoutMs)
      this.pending.set(id, {
        resolve: (response) => {
          clearTimeout(timer)
          if (response.error) reject(new ConfigServiceError(response.error.type, response.error.message))
          else resolve(response)
        },
        reject: (error) => (clearTimeout(timer), reject(error)),
      })
      this.transport
        .publish(CONFIG_REQUEST_QUEUE, encodeConfigRequest(configRequest(fields)), { [ID_PROPERTY]: id })
        .catch((err: Error) => {
          this.pending.delete(id)
          clearTimeout(timer)
          reject(err)
        })
    })
  }

  async put(workspace: string, values: ConfigValue[]): Promise<void> {
    await this.request({ operation: 'put', workspace, values })
  }

  async delete(workspace: string, keys: ConfigKey[]): Promise<void> {
    await this.request({ operation: 'delete', workspace, keys })
  }

  /** Values of the keys, in order; null for a key that does not exist. */
  async get(workspace: string, keys: ConfigKey[]): Promise<(string | null)[]> {
    return (await this.request({ operation: 'get', workspace, keys })).values.map((v) => v.value)
  }

  async list(workspace: string, type: string): Promise<string[]> {
    return (await this.request({ operation: 'list', workspace, type })).directory
  }

  async getValues(workspace: string, type: string): Promise<Record<string, string>> {
    const { values } = await this.request({ operation: 'getvalues', workspace, type })
    return Object.fromEntries(values.map((v) => [v.key, v.value ?? '']))
  }

  async close(): Promise<void> {
    await this.consumer?.close()
    for (const call of this.pending.values()) call.reject(new Error('config client closed'))
    this.pending.clear()
  }
}
