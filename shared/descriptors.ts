/**
 * serverless.yml -> tool services, and tool services -> the `tool-service` and
 * `tool` config objects TrustGraph stores (SPEC §1).
 */
import { Ajv, type ErrorObject } from 'ajv'
import { ToolbridgeError, isRecord } from './errors.ts'
import { defaultQueues, parseQueueName, QueueNameError, type QueueStyle } from './queues.ts'
import { type ArgumentType, type ResponseMode, toolServiceSchema } from './tool-service-schema.ts'

export interface ConfigParam {
  name: string
  required: boolean
}

export interface ArgumentSpec {
  name: string
  type: ArgumentType
  description: string
  /** Checked by the bridge; not part of TrustGraph's descriptor. */
  required: boolean
}

export interface ToolSpec {
  name: string
  description: string
  config: Record<string, string | number | boolean>
  arguments: ArgumentSpec[]
}

export interface ToolServiceSpec {
  /** Key under `functions:` in serverless.yml. */
  functionName: string
  /** `handler:` of the function (`path/to/file.export`), when it has one. */
  handler: string | undefined
  /** Its deployed Lambda name: `name:` if set, else `<service>-<stage>-<key>` as the Serverless Framework names it. */
  lambdaName: string
  id: string
  /** The topic queues were generated from, if they were. */
  topic: string | undefined
  requestQueue: string
  responseQueue: string
  configParams: ConfigParam[]
  response: ResponseMode
  concurrency: number
  timeoutMs: number
  tools: ToolSpec[]
}

export const DEFAULT_CONCURRENCY = 8
export const DEFAULT_TIMEOUT_SECONDS = 30

/** Tool fields TrustGraph defines; a config param with one of these names would overwrite it. */
const RESERVED_TOOL_FIELDS = new Set(['type', 'name', 'description', 'service', 'arguments', 'mcp-tool'])

export class ConfigError extends ToolbridgeError {
  constructor(path: string, message: string) {
    super('config', `${path}: ${message}`)
    this.name = 'ConfigError'
  }
}

/** The `toolService:` block as written in serverless.yml, once the schema accepted it. */
interface ToolServiceBlock {
  id: string
  topic?: string
  requestQueue?: string
  responseQueue?: string
  configParams?: (string | { name: string; required?: boolean })[]
  response?: ResponseMode
  concurrency?: number
  timeout?: number
  tools: ToolBlock[]
}

interface ToolBlock {
  name: string
  description: string
  config?: Record<string, string | number | boolean>
  arguments?: { name: string; type: ArgumentType; description: string; required?: boolean }[]
}

// As strict as osls, which compiles the same schema for `sls` (no union types); verbose for anyOf messages.
const validateToolService = new Ajv({ strict: true, allErrors: true, verbose: true }).compile<ToolServiceBlock>(toolServiceSchema)

/** `/tools/0/name` -> `.tools[0].name` */
const jsonPointerToPath = (pointer: string): string =>
  pointer
    .split('/')
    .slice(1)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')

function schemaMessage(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'additionalProperty':
    case 'additionalProperties':
      return `unknown field "${String(params.additionalProperty)}"`
    case 'required':
      return `missing required field "${String(params.missingProperty)}"`
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
    case 'pattern':
      return 'may only contain letters, digits, ".", "_" and "-"'
    case 'oneOf':
      return 'must be a name or {name, required}'
    case 'anyOf': {
      // `[{type: 'string'}, {type: 'number'}, {type: 'boolean'}]` -> "must be a string, number or boolean"
      const types = (error.schema as { type?: string }[]).map((branch) => branch.type)
      if (types.some((t) => t === undefined)) return 'is invalid'
      return `must be a ${types.length > 1 ? `${types.slice(0, -1).join(', ')} or ${types.at(-1)}` : types[0]}`
    }
    default:
      return error.message ?? 'is invalid'
  }
}

/** Reads every function's `toolService:` block; throws a ConfigError naming the bad field. */
export function readToolServices(serverless: unknown): ToolServiceSpec[] {
  if (!isRecord(serverless)) throw new ConfigError('serverless.yml', 'must be a YAML mapping')
  const functions = serverless.functions
  if (!isRecord(functions)) throw new ConfigError('functions', 'must be a mapping of function names to functions')
  // Lambda's own timeout: the function's, else the provider's.
  const provider = isRecord(serverless.provider) ? serverless.provider : {}
  const providerTimeout = typeof provider.timeout === 'number' ? provider.timeout : undefined
  const namePrefix = lambdaNamePrefix(serverless.service, provider.stage)
  const specs: ToolServiceSpec[] = []
  for (const [functionName, fn] of Object.entries(functions)) {
    if (!isRecord(fn) || fn.toolService === undefined) continue
    specs.push(readToolService(functionName, fn, providerTimeout, namePrefix))
  }
  checkUnique(specs)
  return specs
}

/**
 * `<service>-<stage>-`, the prefix of the Serverless Framework's default function names (stage
 * `dev` unless `provider.stage` says otherwise); '' without a service name. Variables such as
 * `${opt:stage}` are not resolved.
 */
function lambdaNamePrefix(service: unknown, stage: unknown): string {
  const name = isRecord(service) ? service.name : service // `service: {name}` is the old spelling
  if (typeof name !== 'string' || name === '') return ''
  return `${name}-${typeof stage === 'string' && stage !== '' ? stage : 'dev'}-`
}

function readToolService(
  functionName: string,
  fn: Record<string, unknown>,
  providerTimeout: number | undefined,
  namePrefix: string,
): ToolServiceSpec {
  const base = `functions.${functionName}.toolService`
  const block = fn.toolService
  if (!validateToolService(block)) {
    // A typo hides a required field too: name the unknown field, the more telling of the two.
    // A failed oneOf/anyOf says more than the errors of its branches.
    const errors = validateToolService.errors!
    const first = errors[0]!
    const error =
      errors.find((e) => e.keyword === 'additionalProperties') ??
      errors.find((e) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && first.schemaPath.startsWith(`${e.schemaPath}/`)) ??
      first
    throw new ConfigError(base + jsonPointerToPath(error.instancePath), schemaMessage(error))
  }
  const configParams: ConfigParam[] = (block.configParams ?? []).map((p) =>
    typeof p === 'string' ? { name: p, required: false } : { name: p.name, required: p.required ?? false },
  )
  configParams.forEach((param, i) => {
    if (RESERVED_TOOL_FIELDS.has(param.name)) {
      throw new ConfigError(`${base}.configParams[${i}].name`, `"${param.name}" would overwrite the tool's own "${param.name}" field`)
    }
  })
  const { requestQueue, responseQueue } = resolveQueues(base, block)
  const fnTimeout = typeof fn.timeout === 'number' ? fn.timeout : providerTimeout
  const tools = block.tools.map((tool, i) => readTool(`${base}.tools[${i}]`, tool, configParams))
  return {
    functionName,
    handler: typeof fn.handler === 'string' ? fn.handler : undefined,
    lambdaName: typeof fn.name === 'string' && fn.name !== '' ? fn.name : namePrefix + functionName,
    id: block.id,
    topic: block.topic,
    requestQueue,
    responseQueue,
    configParams,
    response: block.response ?? 'single',
    concurrency: block.concurrency ?? DEFAULT_CONCURRENCY,
    timeoutMs: Math.round((block.timeout ?? fnTimeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000),
    tools,
  }
}

function resolveQueues(
  base: string,
  block: ToolServiceBlock,
): { requestQueue: string; responseQueue: string } {
  const explicit = block.requestQueue !== undefined || block.responseQueue !== undefined
  if (explicit && block.topic !== undefined) {
    throw new ConfigError(base, 'give either "topic" or "requestQueue" and "responseQueue", not both')
  }
  if (!explicit) {
    if (block.topic === undefined) throw new ConfigError(base, 'missing "topic" (or "requestQueue" and "responseQueue")')
    const queues = defaultQueues(block.topic)
    return { requestQueue: queues.request, responseQueue: queues.response }
  }
  if (block.requestQueue === undefined) throw new ConfigError(base, 'missing required field "requestQueue"')
  if (block.responseQueue === undefined) throw new ConfigError(base, 'missing required field "responseQueue"')
  for (const field of ['requestQueue', 'responseQueue'] as const) {
    try {
      parseQueueName(block[field]!)
    } catch (err) {
      if (err instanceof QueueNameError) throw new ConfigError(`${base}.${field}`, err.message)
      throw err
    }
  }
  return { requestQueue: block.requestQueue!, responseQueue: block.responseQueue! }
}

function readTool(path: string, tool: ToolBlock, configParams: ConfigParam[]): ToolSpec {
  const config = tool.config ?? {}
  const declared = new Set(configParams.map((p) => p.name))
  for (const key of Object.keys(config)) {
    if (!declared.has(key)) throw new ConfigError(`${path}.config.${key}`, 'is not a config param of this tool service')
  }
  for (const param of configParams) {
    if (param.required && !(param.name in config)) {
      throw new ConfigError(`${path}.config`, `missing required config param "${param.name}"`)
    }
  }
  const args = (tool.arguments ?? []).map((a) => ({ ...a, required: a.required ?? false }))
  const seen = new Set<string>()
  args.forEach((a, i) => {
    if (seen.has(a.name)) throw new ConfigError(`${path}.arguments[${i}].name`, `duplicate argument "${a.name}"`)
    seen.add(a.name)
  })
  return { name: tool.name, description: tool.description, config, arguments: args }
}

function checkUnique(specs: ToolServiceSpec[]): void {
  const services = new Map<string, string>()
  const tools = new Map<string, string>()
  for (const spec of specs) {
    const other = services.get(spec.id)
    if (other) throw new ConfigError(`functions.${spec.functionName}.toolService.id`, `"${spec.id}" is also the id of functions.${other}`)
    services.set(spec.id, spec.functionName)
    spec.tools.forEach((tool, i) => {
      const owner = tools.get(tool.name)
      if (owner) {
        throw new ConfigError(
          `functions.${spec.functionName}.toolService.tools[${i}].name`,
          `tool "${tool.name}" is also defined by functions.${owner}`,
        )
      }
      tools.set(tool.name, spec.functionName)
    })
  }
}

/** SPEC §1 `tool-service` object. */
export function toolServiceDescriptor(spec: ToolServiceSpec, style: QueueStyle = 'logical') {
  const queues =
    style === 'pulsar' && spec.topic !== undefined
      ? defaultQueues(spec.topic, 'pulsar')
      : { request: spec.requestQueue, response: spec.responseQueue }
  return {
    id: spec.id,
    'request-queue': queues.request,
    'response-queue': queues.response,
    'config-params': spec.configParams.map((p) => ({ name: p.name, required: p.required })),
  }
}

/** SPEC §1 `tool` object: config values at the top level, arguments as {name, type, description}. */
export function toolDescriptor(spec: ToolServiceSpec, tool: ToolSpec) {
  return {
    type: 'tool-service',
    name: tool.name,
    description: tool.description,
    service: spec.id,
    ...tool.config,
    arguments: tool.arguments.map((a) => ({ name: a.name, type: a.type, description: a.description })),
  }
}

/** What `toolbridge descriptors` prints: `{"tool-service": {...}, "tool": {...}}`. */
export function descriptors(specs: ToolServiceSpec[], style: QueueStyle = 'logical') {
  const toolServices: Record<string, ReturnType<typeof toolServiceDescriptor>> = {}
  const tools: Record<string, ReturnType<typeof toolDescriptor>> = {}
  for (const spec of specs) {
    toolServices[spec.id] = toolServiceDescriptor(spec, style)
    for (const tool of spec.tools) tools[tool.name] = toolDescriptor(spec, tool)
  }
  return { 'tool-service': toolServices, tool: tools }
}
