/**
 * serverless.yml -> tool services: every function's `toolService:` block and
 * `custom.toolServices`, checked and resolved (TrustGraph's descriptors are
 * made from them in descriptors.ts).
 */
import type { ErrorObject, ValidateFunction } from 'ajv'
import { ConfigError, type ErrorKind, isRecord } from '../../shared/errors.ts'
import { defaultQueues, parseQueueName, QueueNameError } from '../../shared/queues.ts'
import {
  type AnswerFormat,
  type ArgumentType,
  type EventShape,
  type HttpMethod,
  type ResponseMode,
  TEMPLATE_PATH,
  TEMPLATE_PLACEHOLDER,
} from '../../shared/tool-service-schema.ts'
import { checkDeadLetterQueue } from './dead-letter-queue.ts'
import { argumentsOfSchema, compileInputSchema } from './input-schema.ts'
import * as generated from './tool-service-validators.generated.ts'

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

/** MCP's behaviour hints, as declared: a hint left out is absent here. */
export interface ToolHints {
  readOnlyHint?: boolean
  destructiveHint?: boolean
  idempotentHint?: boolean
  openWorldHint?: boolean
}

export interface ToolSpec {
  name: string
  /** A name for people; MCP only. */
  title?: string
  description: string
  config: Record<string, string | number | boolean>
  arguments: ArgumentSpec[]
  /** MCP only. */
  annotations: ToolHints
  /** JSON Schema of the answer, which is then JSON; MCP only. */
  output?: Record<string, unknown>
  /** A call of an MCP client that declares Tasks becomes a task at once; MCP only. */
  longRunning?: boolean
  /**
   * The arguments as a JSON Schema (2020-12), declared instead of `arguments:`: the bridge checks
   * requests with it, MCP lists it as it is, and `arguments` holds its top-level properties (input-schema.ts).
   */
  inputSchema?: Record<string, unknown>
}

export interface ToolServiceSpec {
  /** Key under `functions:` or `custom.toolServices` in serverless.yml. */
  functionName: string
  /** Where the function runs. */
  location: FunctionLocation
  id: string
  /** The topic queues were generated from, if they were. */
  topic: string | undefined
  requestQueue: string
  responseQueue: string
  configParams: ConfigParam[]
  response: ResponseMode
  concurrency: number
  /** Invocations one worker thread may run at once (the `worker-threads` invoker; default 1, as Lambda). */
  invocationsPerWorker: number
  timeoutMs: number
  /** Lambda's `memorySize` (the function's, else the provider's), MB; the worker-threads invoker's heap limit per worker. */
  memoryMb: number | undefined
  /** The provider's `environment:` and the function's over it: what the function sees in `process.env` in a worker thread. */
  environment?: Record<string, string>
  tools: ToolSpec[]
  /** What the function receives and how its result becomes the answer (bridge/core/event-shapes.ts). */
  shape: ShapeSpec
  /** Stale requests, redeliveries and dead letters (bridge/core/delivery-guard.ts); what is unset takes the bridge's defaults. */
  delivery?: DeliverySpec
}

/** A service's own delivery settings (`maxAge`, `idempotent`, `answeredMemory`, `deadLetters`). */
export interface DeliverySpec {
  maxAgeSeconds?: number
  idempotent?: boolean
  answeredMemorySize?: number
  answeredMemoryTtlSeconds?: number
  /** When the shared answered-once store cannot say whether a request was answered: run it anyway (default), or refuse it. */
  answeredStoreWhenDown?: 'run' | 'refuse'
  deadLetterQueue?: string
  /** Error answers also copied to the dead-letter queue. */
  deadLetterKinds?: ErrorKind[]
}

/**
 * Where a tool service's function runs, settled when serverless.yml is read;
 * bridge/invokers/invoker-for-location.ts picks the invoker for each kind.
 */
export type FunctionLocation = HandlerLocation | LambdaLocation | HttpLocation

/**
 * A function of this serverless.yml (under `functions:`): its handler runs on
 * this machine, or with `--invoker lambda` its deployed Lambda function is called.
 */
export interface HandlerLocation {
  kind: 'handler'
  /** `path/to/file.export`, relative to serverless.yml. */
  handler: string
  /** Its deployed Lambda name: `name:` if set, else `<service>-<stage>-<key>` as the Serverless Framework names it. */
  lambdaName: string
}

/** Someone else's Lambda function (`custom.toolServices`, `function:`). */
export interface LambdaLocation {
  kind: 'lambda'
  /** Its name or ARN. */
  lambdaName: string
  /** Its region: `region:`, else the ARN's, else the bridge's. */
  region: string | undefined
  /** An IAM role to assume for calling it. */
  role: string | undefined
}

/** A function reached over HTTP (`custom.toolServices`, `url:`). */
export interface HttpLocation {
  kind: 'http'
  url: string
  method: HttpMethod
  headers: Record<string, string>
  /** Header name -> environment variable, read when the bridge starts. */
  headersFromEnv: Record<string, string>
}

export interface ShapeSpec {
  event: EventShape
  answer: AnswerFormat
  /** For `apigw-v1` and `apigw-v2`. */
  route?: RouteSpec
  /** For `template`. */
  template?: unknown
}

export interface RouteSpec {
  method: HttpMethod
  path: string
  query: string[]
  headers: Record<string, string>
}

export const DEFAULT_CONCURRENCY = 8
export const DEFAULT_TIMEOUT_SECONDS = 30

/** Tool fields TrustGraph defines; a config param with one of these names would overwrite it. */
const RESERVED_TOOL_FIELDS = new Set(['type', 'name', 'description', 'service', 'arguments', 'mcp-tool'])

/** The `toolService:` block as written in serverless.yml, once the schema accepted it. */
interface ToolServiceBlock {
  id: string
  topic?: string
  requestQueue?: string
  responseQueue?: string
  configParams?: (string | { name: string; required?: boolean })[]
  response?: ResponseMode
  concurrency?: number
  invocationsPerWorker?: number
  timeout?: number
  maxAge?: number
  idempotent?: boolean
  answeredMemory?: { size?: number; ttl?: number }
  answeredStore?: { whenDown?: 'run' | 'refuse' }
  deadLetters?: { queue?: string; kinds?: ErrorKind[] }
  tools: ToolBlock[]
  event?: EventShape
  route?: { method?: HttpMethod; path?: string; query?: string[]; headers?: Record<string, string> }
  template?: unknown
  answer?: AnswerFormat
  function?: string
  region?: string
  role?: string
  url?: string
  method?: HttpMethod
  headers?: Record<string, string>
  headersFromEnv?: Record<string, string>
}

interface ToolBlock {
  name: string
  title?: string
  description: string
  annotations?: ToolHints
  output?: Record<string, unknown>
  longRunning?: boolean
  inputSchema?: Record<string, unknown>
  config?: Record<string, string | number | boolean>
  arguments?: { name: string; type: ArgumentType; description: string; required?: boolean }[]
}

// toolServiceSchema and externalToolServiceSchema compiled ahead of time by scripts/compile-schemas.ts (with
// ajv as strict as osls, which compiles the same schema for `sls`; verbose for anyOf messages).
const validateToolService = generated.validateToolService as ValidateFunction<ToolServiceBlock>
const validateExternalToolService = generated.validateExternalToolService as ValidateFunction<ToolServiceBlock>

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
  // A serverless.yml with only `custom.toolServices` may leave `functions:` out.
  const functions = serverless.functions ?? {}
  if (!isRecord(functions)) throw new ConfigError('functions', 'must be a mapping of function names to functions')
  // Lambda's own timeout and memory: the function's, else the provider's.
  const provider = isRecord(serverless.provider) ? serverless.provider : {}
  const providerDefaults: FunctionDefaults = {
    timeout: typeof provider.timeout === 'number' ? provider.timeout : undefined,
    memorySize: typeof provider.memorySize === 'number' ? provider.memorySize : undefined,
    environment: readEnvironment('provider.environment', provider.environment),
  }
  const namePrefix = lambdaNamePrefix(serverless.service, provider.stage)
  const specs: ToolServiceSpec[] = []
  for (const [functionName, fn] of Object.entries(functions)) {
    if (!isRecord(fn) || fn.toolService === undefined) continue
    const { service } = readToolService(functionName, fn, providerDefaults)
    specs.push({ ...service, location: handlerLocation(functionName, fn, namePrefix) })
  }
  for (const external of readExternalToolServices(serverless.custom, providerDefaults)) {
    // The invokers tell services apart by this key.
    if (Object.hasOwn(functions, external.functionName)) {
      throw new ConfigError(
        `custom.toolServices.${external.functionName}`,
        `"${external.functionName}" is also a key under functions:`,
      )
    }
    specs.push(external)
  }
  checkUnique(specs)
  return specs
}

/** A function of this serverless.yml: its handler, and its name once deployed. */
function handlerLocation(functionName: string, fn: Record<string, unknown>, namePrefix: string): HandlerLocation {
  if (typeof fn.handler !== 'string' || fn.handler === '') {
    throw new ConfigError(
      `functions.${functionName}.handler`,
      'missing: a tool service runs its function\'s "handler:" (a Lambda function without one, such as an image, goes under custom.toolServices with "function:")',
    )
  }
  return {
    kind: 'handler',
    handler: fn.handler,
    lambdaName: typeof fn.name === 'string' && fn.name !== '' ? fn.name : namePrefix + functionName,
  }
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

/**
 * `custom.toolServices.<key>`: tool services for functions this serverless.yml does not define,
 * a Lambda function (`function:`) or an HTTP endpoint (`url:`).
 */
function readExternalToolServices(custom: unknown, providerDefaults: FunctionDefaults): ToolServiceSpec[] {
  if (!isRecord(custom) || custom.toolServices === undefined) return []
  if (!isRecord(custom.toolServices))
    throw new ConfigError('custom.toolServices', 'must be a mapping of names to tool services')
  return Object.entries(custom.toolServices).map(([key, raw]) => {
    const base = `custom.toolServices.${key}`
    const { service, block } = readToolService(
      key,
      { toolService: raw },
      providerDefaults,
      base,
      validateExternalToolService,
    )
    return { ...service, location: externalLocation(base, block) }
  })
}

/** `function:` or `url:`, exactly one, with only the fields that fit it. */
function externalLocation(base: string, block: ToolServiceBlock): LambdaLocation | HttpLocation {
  const { function: lambdaName, url } = block
  if (block.invocationsPerWorker !== undefined) {
    throw new ConfigError(
      `${base}.invocationsPerWorker`,
      'is for a function of this serverless.yml run in worker threads; this one runs elsewhere',
    )
  }
  if (lambdaName !== undefined && url === undefined) {
    for (const field of ['method', 'headers', 'headersFromEnv'] as const) {
      if (block[field] !== undefined)
        throw new ConfigError(`${base}.${field}`, 'is for a "url:" tool service; this one names a Lambda "function:"')
    }
    return { kind: 'lambda', lambdaName, region: block.region ?? regionOfArn(lambdaName), role: block.role }
  }
  if (url !== undefined && lambdaName === undefined) {
    for (const field of ['region', 'role'] as const) {
      if (block[field] !== undefined)
        throw new ConfigError(`${base}.${field}`, 'is for a Lambda "function:"; this one has a "url:"')
    }
    if (block.event === 'apigw-v1' || block.event === 'apigw-v2') {
      throw new ConfigError(
        `${base}.event`,
        'an API Gateway event is for a Lambda function; an HTTP function gets the event as its body',
      )
    }
    return {
      kind: 'http',
      url,
      method: block.method ?? 'POST',
      headers: block.headers ?? {},
      headersFromEnv: block.headersFromEnv ?? {},
    }
  }
  throw new ConfigError(base, 'give either "function" (a Lambda name or ARN) or "url", not both or neither')
}

/** `arn:aws:lambda:eu-west-1:123456789012:function:name` -> `eu-west-1`. */
function regionOfArn(name: string): string | undefined {
  return /^arn:aws[a-z-]*:lambda:([a-z0-9-]+):/.exec(name)?.[1]
}

function readShape(base: string, block: ToolServiceBlock): ShapeSpec {
  const event = block.event ?? 'envelope'
  const proxy = event === 'apigw-v1' || event === 'apigw-v2'
  if (block.route !== undefined && !proxy)
    throw new ConfigError(`${base}.route`, 'is for "event: apigw-v1" or "event: apigw-v2"')
  if ((block.template !== undefined) !== (event === 'template')) {
    throw new ConfigError(
      `${base}.${event === 'template' ? 'event' : 'template'}`,
      '"event: template" and "template:" go together',
    )
  }
  if (event === 'template') checkTemplate(`${base}.template`, block.template)
  // A proxy response is one HTTP response: there are no chunks to pass on.
  if (proxy && block.response === 'stream')
    throw new ConfigError(
      `${base}.response`,
      `"stream" does not fit "event: ${event}": an API Gateway response comes in one piece`,
    )
  const shape: ShapeSpec = { event, answer: block.answer ?? 'text' }
  if (proxy) {
    const route = block.route ?? {}
    shape.route = {
      method: route.method ?? 'POST',
      path: route.path ?? '/',
      query: route.query ?? [],
      headers: route.headers ?? {},
    }
  }
  if (event === 'template') shape.template = block.template
  return shape
}

/** Every `{{...}}` in a template names the user, the config or the arguments. */
function checkTemplate(path: string, value: unknown): void {
  if (typeof value === 'string') {
    for (const [placeholder, name] of value.matchAll(TEMPLATE_PLACEHOLDER)) {
      if (!TEMPLATE_PATH.test(name!) || name!.startsWith('user.')) {
        throw new ConfigError(
          path,
          `unknown placeholder ${placeholder}: use {{arguments.<name>}}, {{config.<name>}}, {{user}} or {{arguments}}`,
        )
      }
    }
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => checkTemplate(`${path}[${i}]`, item))
  } else if (isRecord(value)) {
    for (const [key, item] of Object.entries(value)) checkTemplate(`${path}.${key}`, item)
  }
}

/** `provider:` settings a function inherits unless it sets its own. */
interface FunctionDefaults {
  timeout: number | undefined
  memorySize: number | undefined
  environment: Record<string, string>
}

/**
 * An `environment:` mapping as text values; `${env:NAME}` is replaced with
 * the bridge's own variable, as the Serverless Framework does, so a secret
 * can reach a function without being written in serverless.yml.
 */
function readEnvironment(path: string, value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {}
  if (!isRecord(value)) throw new ConfigError(path, 'must be a mapping of variable names to values')
  const environment: Record<string, string> = {}
  for (const [name, raw] of Object.entries(value)) {
    if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') {
      throw new ConfigError(`${path}.${name}`, 'must be a string, number or boolean')
    }
    environment[name] = String(raw).replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
      const found = process.env[variable]
      if (found === undefined)
        throw new ConfigError(`${path}.${name}`, `\${env:${variable}} is not set in the bridge's environment`)
      return found
    })
  }
  return environment
}

/** A `toolService:` block, checked, and the service it describes but for where its function runs. */
function readToolService(
  functionName: string,
  fn: Record<string, unknown>,
  providerDefaults: FunctionDefaults,
  base = `functions.${functionName}.toolService`,
  validate = validateToolService,
): { service: Omit<ToolServiceSpec, 'location'>; block: ToolServiceBlock } {
  const block = fn.toolService
  if (!validate(block)) {
    // A typo hides a required field too: name the unknown field, the more telling of the two.
    // A failed oneOf/anyOf says more than the errors of its branches.
    const errors = validate.errors!
    const first = errors[0]!
    const error =
      errors.find((e) => e.keyword === 'additionalProperties') ??
      errors.find(
        (e) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && first.schemaPath.startsWith(`${e.schemaPath}/`),
      ) ??
      first
    throw new ConfigError(base + jsonPointerToPath(error.instancePath), schemaMessage(error))
  }
  const configParams: ConfigParam[] = (block.configParams ?? []).map((p) =>
    typeof p === 'string' ? { name: p, required: false } : { name: p.name, required: p.required ?? false },
  )
  configParams.forEach((param, i) => {
    if (RESERVED_TOOL_FIELDS.has(param.name)) {
      throw new ConfigError(
        `${base}.configParams[${i}].name`,
        `"${param.name}" would overwrite the tool's own "${param.name}" field`,
      )
    }
  })
  const { requestQueue, responseQueue } = resolveQueues(base, block)
  const fnTimeout = typeof fn.timeout === 'number' ? fn.timeout : providerDefaults.timeout
  const tools = block.tools.map((tool, i) => readTool(`${base}.tools[${i}]`, tool, configParams))
  const service = {
    functionName,
    id: block.id,
    topic: block.topic,
    requestQueue,
    responseQueue,
    configParams,
    response: block.response ?? 'single',
    concurrency: block.concurrency ?? DEFAULT_CONCURRENCY,
    invocationsPerWorker: block.invocationsPerWorker ?? 1,
    timeoutMs: Math.round((block.timeout ?? fnTimeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000),
    memoryMb: typeof fn.memorySize === 'number' ? fn.memorySize : providerDefaults.memorySize,
    environment: {
      ...providerDefaults.environment,
      ...readEnvironment(`functions.${functionName}.environment`, fn.environment),
    },
    tools,
    shape: readShape(base, block),
    ...readDelivery(base, block),
  }
  return { service, block }
}

/** `delivery` only when the block says something about it, so that specs without it stay as they were. */
function readDelivery(base: string, block: ToolServiceBlock): { delivery?: DeliverySpec } {
  const delivery: DeliverySpec = {}
  if (block.maxAge !== undefined) delivery.maxAgeSeconds = block.maxAge
  if (block.idempotent !== undefined) delivery.idempotent = block.idempotent
  if (block.answeredMemory?.size !== undefined) delivery.answeredMemorySize = block.answeredMemory.size
  if (block.answeredMemory?.ttl !== undefined) delivery.answeredMemoryTtlSeconds = block.answeredMemory.ttl
  if (block.answeredStore?.whenDown !== undefined) delivery.answeredStoreWhenDown = block.answeredStore.whenDown
  if (block.deadLetters?.queue !== undefined) {
    delivery.deadLetterQueue = checkDeadLetterQueue(`${base}.deadLetters.queue`, block.deadLetters.queue)
  }
  if (block.deadLetters?.kinds !== undefined) delivery.deadLetterKinds = block.deadLetters.kinds
  return Object.keys(delivery).length === 0 ? {} : { delivery }
}

function resolveQueues(base: string, block: ToolServiceBlock): { requestQueue: string; responseQueue: string } {
  const explicit = block.requestQueue !== undefined || block.responseQueue !== undefined
  if (explicit && block.topic !== undefined) {
    throw new ConfigError(base, 'give either "topic" or "requestQueue" and "responseQueue", not both')
  }
  if (!explicit) {
    if (block.topic === undefined)
      throw new ConfigError(base, 'missing "topic" (or "requestQueue" and "responseQueue")')
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
  if (tool.inputSchema !== undefined) {
    if (tool.arguments !== undefined)
      throw new ConfigError(
        `${path}.inputSchema`,
        'declare the arguments either as `arguments:` or as `inputSchema:`, not both',
      )
    compileInputSchema(`${path}.inputSchema`, tool.inputSchema)
  }
  const args =
    tool.inputSchema === undefined
      ? (tool.arguments ?? []).map((a) => ({ ...a, required: a.required ?? false }))
      : argumentsOfSchema(tool.inputSchema)
  const seen = new Set<string>()
  args.forEach((a, i) => {
    if (seen.has(a.name)) throw new ConfigError(`${path}.arguments[${i}].name`, `duplicate argument "${a.name}"`)
    seen.add(a.name)
  })
  return {
    name: tool.name,
    ...(tool.title === undefined ? {} : { title: tool.title }),
    description: tool.description,
    config,
    arguments: args,
    annotations: tool.annotations ?? {},
    ...(tool.output === undefined ? {} : { output: tool.output }),
    ...(tool.longRunning ? { longRunning: true } : {}),
    ...(tool.inputSchema === undefined ? {} : { inputSchema: tool.inputSchema }),
  }
}

/** Where a spec's block is in serverless.yml: only a function of its own has a handler. */
const blockPath = (spec: ToolServiceSpec) =>
  spec.location.kind === 'handler'
    ? `functions.${spec.functionName}.toolService`
    : `custom.toolServices.${spec.functionName}`
const ownerName = (spec: ToolServiceSpec) =>
  spec.location.kind === 'handler' ? `functions.${spec.functionName}` : `custom.toolServices.${spec.functionName}`

function checkUnique(specs: ToolServiceSpec[]): void {
  const services = new Map<string, string>()
  const tools = new Map<string, string>()
  for (const spec of specs) {
    const other = services.get(spec.id)
    if (other) throw new ConfigError(`${blockPath(spec)}.id`, `"${spec.id}" is also the id of ${other}`)
    services.set(spec.id, ownerName(spec))
    spec.tools.forEach((tool, i) => {
      const owner = tools.get(tool.name)
      if (owner) {
        throw new ConfigError(`${blockPath(spec)}.tools[${i}].name`, `tool "${tool.name}" is also defined by ${owner}`)
      }
      tools.set(tool.name, ownerName(spec))
    })
  }
}
