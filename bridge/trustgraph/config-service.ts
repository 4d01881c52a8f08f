/**
 * A TrustGraph-compatible configuration service, in memory, for the embedded
 * broker: `toolbridge start` runs it so that `register` and TrustGraph
 * processors' config reads work with nothing else running.
 *
 * It answers as TrustGraph 2.11.1's config service does on its system queue
 * (trustgraph-flow `config/service`): the operations, their answers, the
 * version counter bumped by every put and delete, the `notify:tg:config`
 * push after a change, and its error types and messages. Keys come back
 * sorted, as Cassandra's clustering order returns them; types sorted too
 * (Cassandra returns them in its partitions' token order).
 */
import {
  CONFIG_PUSH_QUEUE,
  CONFIG_REQUEST_QUEUE,
  CONFIG_RESPONSE_QUEUE,
  configResponse,
  configValue,
  decodeConfigRequest,
  encodeConfigPush,
  encodeConfigResponse,
  type ConfigRequest,
  type ConfigResponse,
} from '../../shared/config-protocol.ts'
import { ID_PROPERTY, UNKNOWN_ID } from '../../shared/protocol.ts'
import { silentLogger, type Logger } from '../support/logger.ts'
import type { Consumer, Delivery, Transport } from '../transports/transport.ts'
import { messageOf } from '../../shared/errors.ts'

/** TrustGraph's config service id, which is also its request subscription. */
export const CONFIG_SERVICE_SUBSCRIPTION = 'config-svc'

/** workspace -> type -> key -> value */
type Store = Map<string, Map<string, Map<string, string>>>

const WORKSPACE_OPERATIONS = new Set(['get', 'list', 'getvalues', 'put', 'delete', 'config'])

const failure = (type: string, message: string): ConfigResponse => configResponse({ error: { type, message } })

/** Workspaces starting with "_" hold templates: TrustGraph stores them but never announces their changes. */
const isReservedWorkspace = (workspace: string) => workspace.startsWith('_')

export class MemoryConfigStore {
  private readonly store: Store = new Map()
  version = 0

  private entries(workspace: string, type: string): Map<string, string> | undefined {
    return this.store.get(workspace)?.get(type)
  }

  get(workspace: string, type: string, key: string): string | null {
    return this.entries(workspace, type)?.get(key) ?? null
  }

  keys(workspace: string, type: string): string[] {
    return [...(this.entries(workspace, type)?.keys() ?? [])].sort()
  }

  values(workspace: string, type: string): [string, string][] {
    const entries = this.entries(workspace, type)
    return this.keys(workspace, type).map((key) => [key, entries!.get(key)!])
  }

  put(workspace: string, type: string, key: string, value: string): void {
    let types = this.store.get(workspace)
    if (!types) this.store.set(workspace, (types = new Map()))
    let entries = types.get(type)
    if (!entries) types.set(type, (entries = new Map()))
    entries.set(key, value)
  }

  delete(workspace: string, type: string, key: string): void {
    this.entries(workspace, type)?.delete(key)
  }

  workspaces(): string[] {
    return [...this.store.keys()].sort()
  }

  all(workspace: string): Record<string, Record<string, string>> {
    const config: Record<string, Record<string, string>> = {}
    const types = this.store.get(workspace) ?? new Map<string, Map<string, string>>()
    for (const type of [...types.keys()].sort()) {
      const values = this.values(workspace, type)
      if (values.length > 0) config[type] = Object.fromEntries(values)
    }
    return config
  }
}

export interface ConfigService {
  readonly store: MemoryConfigStore
  /** Stops answering; the transport is the caller's to close. */
  stop(): Promise<void>
}

export interface ConfigServiceOptions {
  transport: Transport
  logger?: Logger
  store?: MemoryConfigStore
}

export async function startConfigService(options: ConfigServiceOptions): Promise<ConfigService> {
  const { transport } = options
  const logger = options.logger ?? silentLogger
  const store = options.store ?? new MemoryConfigStore()

  async function changed(types: string[], workspace: string): Promise<void> {
    store.version++
    const changes: Record<string, string[]> = {}
    if (!isReservedWorkspace(workspace)) for (const type of types) changes[type] = [workspace]
    await transport.publish(CONFIG_PUSH_QUEUE, encodeConfigPush({ version: store.version, changes }), {})
  }

  async function answer(request: ConfigRequest): Promise<ConfigResponse> {
    const { operation, workspace } = request
    if (operation === 'getvalues-all-ws' || operation === 'getkeys-all-ws') {
      const withValues = operation === 'getvalues-all-ws'
      const values = store
        .workspaces()
        .flatMap((ws) =>
          store
            .values(ws, request.type)
            .map(([key, value]) => configValue(request.type, key, withValues ? value : '', ws)),
        )
      return configResponse({ version: store.version, values })
    }
    if (!WORKSPACE_OPERATIONS.has(operation)) return failure('bad-operation', 'Bad operation')
    if (!workspace) return failure('bad-request', 'Workspace is required')
    switch (operation) {
      case 'get':
        return configResponse({
          version: store.version,
          values: request.keys.map((k) => configValue(k.type, k.key, store.get(workspace, k.type, k.key))),
        })
      case 'list':
        return configResponse({ version: store.version, directory: store.keys(workspace, request.type) })
      case 'getvalues':
        return configResponse({
          version: store.version,
          values: store.values(workspace, request.type).map(([key, value]) => configValue(request.type, key, value)),
        })
      case 'config':
        return configResponse({ version: store.version, config: store.all(workspace) })
      case 'put':
        for (const v of request.values) store.put(workspace, v.type, v.key, v.value ?? '')
        await changed([...new Set(request.values.map((v) => v.type))], workspace)
        return configResponse()
      default: // delete
        for (const k of request.keys) store.delete(workspace, k.type, k.key)
        await changed([...new Set(request.keys.map((k) => k.type))], workspace)
        return configResponse()
    }
  }

  async function handle(delivery: Delivery): Promise<void> {
    const id = delivery.properties[ID_PROPERTY] || UNKNOWN_ID
    const decoded = decodeConfigRequest(delivery.body)
    let response: ConfigResponse
    if (!decoded.ok) {
      response = failure('config-error', decoded.message)
    } else {
      try {
        response = await answer(decoded.value)
      } catch (err) {
        response = failure('config-error', messageOf(err))
      }
    }
    if (response.error)
      logger.warn({ id, type: response.error.type }, `config request refused: ${response.error.message}`)
    try {
      await transport.publish(CONFIG_RESPONSE_QUEUE, encodeConfigResponse(response), { [ID_PROPERTY]: id })
    } catch (err) {
      logger.error({ id, err: messageOf(err) }, 'could not publish a config response')
    }
    delivery.ack()
  }

  const consumer: Consumer = await transport.consume(
    CONFIG_REQUEST_QUEUE,
    { subscription: CONFIG_SERVICE_SUBSCRIPTION, concurrency: 1 }, // one at a time: puts and versions stay in order
    (delivery) => void handle(delivery),
  )
  return {
    store,
    stop: () => consumer.close(),
  }
}
