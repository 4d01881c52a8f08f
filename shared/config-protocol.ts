/**
 * TrustGraph's configuration service on the wire
 * (docs/wire-contract.md#configuration-service-messages), as TrustGraph
 * 2.11.1 writes it: ConfigRequest on `request:tg:config`, ConfigResponse on
 * `response:tg:config` correlated by the `id` property, and ConfigPush
 * broadcast on `notify:tg:config` after every change.
 *
 * TrustGraph serialises these dataclasses whole (every field, in declaration
 * order, `null` for None) with Python's `json.dumps`; the encoders below
 * write the same bytes, and the decoders accept any subset of the fields.
 */
import { isRecord } from './errors.ts'
import { parseJsonBytes, typeName, type Decoded, type WireError } from './protocol.ts'
import { pythonJsonDumps } from './python-json.ts'

export const CONFIG_REQUEST_QUEUE = 'request:tg:config'
export const CONFIG_RESPONSE_QUEUE = 'response:tg:config'
export const CONFIG_PUSH_QUEUE = 'notify:tg:config'
export const DEFAULT_WORKSPACE = 'default'

/** What the configuration service answers; `getvalues-all-ws` and `getkeys-all-ws` span workspaces. */
export const CONFIG_OPERATIONS = [
  'get',
  'list',
  'getvalues',
  'put',
  'delete',
  'config',
  'getvalues-all-ws',
  'getkeys-all-ws',
] as const
export type ConfigOperation = (typeof CONFIG_OPERATIONS)[number]

export interface ConfigKey {
  type: string
  key: string
}

export interface ConfigValue {
  type: string
  key: string
  /** null: `get` of a key that does not exist. */
  value: string | null
  /** Set only in the answers to the `-all-ws` operations. */
  workspace: string
}

export interface ConfigRequest {
  operation: string
  workspace: string
  keys: ConfigKey[]
  type: string
  values: ConfigValue[]
}

export interface ConfigResponse {
  version: number
  values: ConfigValue[]
  directory: string[]
  config: Record<string, Record<string, string>>
  error: WireError | null
}

export interface ConfigPush {
  version: number
  /** Config type -> the workspaces where it changed. */
  changes: Record<string, string[]>
}

const utf8 = (text: string): Uint8Array => Buffer.from(text, 'utf8')

const valueFields = (v: ConfigValue) => ({ type: v.type, key: v.key, value: v.value, workspace: v.workspace })

export function configRequest(fields: Partial<ConfigRequest> & { operation: ConfigOperation }): ConfigRequest {
  return { workspace: '', keys: [], type: '', values: [], ...fields }
}

export function configResponse(fields: Partial<ConfigResponse> = {}): ConfigResponse {
  return { version: 0, values: [], directory: [], config: {}, error: null, ...fields }
}

export const configValue = (type: string, key: string, value: string | null, workspace = ''): ConfigValue => ({
  type,
  key,
  value,
  workspace,
})

/**
 * TrustGraph's dataclasses (trustgraph-base 2.11.1, `schema/config.py`):
 *
 *   ConfigRequest
 *     operation: str = ""              get, list, getvalues, put, delete, config, getvalues-all-ws, getkeys-all-ws
 *     workspace: str = ""              every operation but the -all-ws ones
 *     keys: list[ConfigKey] = []       get, delete
 *     type: str = ""                   list, getvalues, the -all-ws ones
 *     values: list[ConfigValue] = []   put
 *   ConfigKey
 *     type: str = ""
 *     key: str = ""
 *   ConfigValue
 *     type: str = ""
 *     key: str = ""
 *     value: str = ""
 *     workspace: str = ""              filled only in -all-ws answers
 */
export function encodeConfigRequest(request: ConfigRequest): Uint8Array {
  return utf8(
    pythonJsonDumps({
      operation: request.operation,
      workspace: request.workspace,
      keys: request.keys.map((k) => ({ type: k.type, key: k.key })),
      type: request.type,
      values: request.values.map(valueFields),
    }),
  )
}

/**
 *   ConfigResponse
 *     version: int = 0
 *     values: list[ConfigValue] = []             get, getvalues, the -all-ws ones
 *     directory: list[str] = []                  list
 *     config: dict[str, dict[str, str]] = {}     config: type -> key -> value
 *     error: Error | None = None                 Error: type: str, message: str
 */
export function encodeConfigResponse(response: ConfigResponse): Uint8Array {
  return utf8(
    pythonJsonDumps({
      version: response.version,
      values: response.values.map(valueFields),
      directory: response.directory,
      config: response.config,
      error: response.error === null ? null : { type: response.error.type, message: response.error.message },
    }),
  )
}

/**
 *   ConfigPush
 *     version: int = 0
 *     changes: dict[str, list[str]] = {}                   config type -> workspaces where it changed
 *     workspace_changes: WorkspaceChanges | None = None    workspaces created and deleted; always None here
 */
export function encodeConfigPush(push: ConfigPush): Uint8Array {
  return utf8(pythonJsonDumps({ version: push.version, changes: push.changes, workspace_changes: null }))
}

function stringField(body: Record<string, unknown>, name: string, where: string): Decoded<string> {
  const value = body[name] ?? ''
  if (typeof value !== 'string')
    return { ok: false, message: `${where}"${name}" must be a string, got ${typeName(value)}` }
  return { ok: true, value }
}

function listField<T>(
  body: Record<string, unknown>,
  name: string,
  item: (entry: Record<string, unknown>, where: string) => Decoded<T>,
): Decoded<T[]> {
  const value = body[name] ?? []
  if (!Array.isArray(value)) return { ok: false, message: `"${name}" must be a list, got ${typeName(value)}` }
  const items: T[] = []
  for (const [i, entry] of value.entries()) {
    const where = `${name}[${i}]`
    if (!isRecord(entry)) return { ok: false, message: `${where} must be an object, got ${typeName(entry)}` }
    const decoded = item(entry, `${where}.`)
    if (!decoded.ok) return decoded
    items.push(decoded.value)
  }
  return { ok: true, value: items }
}

function decodeKey(entry: Record<string, unknown>, where: string): Decoded<ConfigKey> {
  const type = stringField(entry, 'type', where)
  if (!type.ok) return type
  const key = stringField(entry, 'key', where)
  if (!key.ok) return key
  return { ok: true, value: { type: type.value, key: key.value } }
}

function decodeValue(entry: Record<string, unknown>, where: string): Decoded<ConfigValue> {
  const key = decodeKey(entry, where)
  if (!key.ok) return key
  const value = entry.value ?? null
  if (value !== null && typeof value !== 'string')
    return { ok: false, message: `${where}"value" must be a string, got ${typeName(value)}` }
  const workspace = stringField(entry, 'workspace', where)
  if (!workspace.ok) return workspace
  return { ok: true, value: { ...key.value, value, workspace: workspace.value } }
}

/** Reads a ConfigRequest (the dataclass above encodeConfigRequest). */
export function decodeConfigRequest(bytes: Uint8Array): Decoded<ConfigRequest> {
  const parsed = parseJsonBytes(bytes)
  if (!parsed.ok) return parsed
  const body = parsed.value
  if (!isRecord(body)) return { ok: false, message: `ConfigRequest must be a JSON object, got ${typeName(body)}` }
  const operation = stringField(body, 'operation', '')
  if (!operation.ok) return operation
  const workspace = stringField(body, 'workspace', '')
  if (!workspace.ok) return workspace
  const type = stringField(body, 'type', '')
  if (!type.ok) return type
  const keys = listField(body, 'keys', decodeKey)
  if (!keys.ok) return keys
  const values = listField(body, 'values', decodeValue)
  if (!values.ok) return values
  return {
    ok: true,
    value: {
      operation: operation.value,
      workspace: workspace.value,
      keys: keys.value,
      type: type.value,
      values: values.value,
    },
  }
}

/** Reads a ConfigResponse (the dataclass above encodeConfigResponse). */
export function decodeConfigResponse(bytes: Uint8Array): Decoded<ConfigResponse> {
  const parsed = parseJsonBytes(bytes)
  if (!parsed.ok) return parsed
  const body = parsed.value
  if (!isRecord(body)) return { ok: false, message: `ConfigResponse must be a JSON object, got ${typeName(body)}` }
  const values = listField(body, 'values', decodeValue)
  if (!values.ok) return values
  const directory = body.directory ?? []
  if (!Array.isArray(directory) || !directory.every((d) => typeof d === 'string')) {
    return { ok: false, message: '"directory" must be a list of strings' }
  }
  const config = body.config ?? {}
  if (!isRecord(config)) return { ok: false, message: '"config" must be an object' }
  let error: WireError | null = null
  if (body.error !== null && body.error !== undefined) {
    if (!isRecord(body.error)) return { ok: false, message: '"error" must be an object or null' }
    error = { type: String(body.error.type ?? ''), message: String(body.error.message ?? '') }
  }
  return {
    ok: true,
    value: {
      version: typeof body.version === 'number' ? body.version : 0,
      values: values.value,
      directory: directory as string[],
      config: config as Record<string, Record<string, string>>,
      error,
    },
  }
}

/** Reads a ConfigPush (the dataclass above encodeConfigPush); workspace_changes is not read. */
export function decodeConfigPush(bytes: Uint8Array): Decoded<ConfigPush> {
  const parsed = parseJsonBytes(bytes)
  if (!parsed.ok) return parsed
  const body = parsed.value
  if (!isRecord(body)) return { ok: false, message: `ConfigPush must be a JSON object, got ${typeName(body)}` }
  const changes = body.changes ?? {}
  if (!isRecord(changes)) return { ok: false, message: '"changes" must be an object' }
  return {
    ok: true,
    value: {
      version: typeof body.version === 'number' ? body.version : 0,
      changes: changes as Record<string, string[]>,
    },
  }
}
