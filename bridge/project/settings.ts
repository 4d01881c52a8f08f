/**
 * Flags + environment -> one validated configuration. The only place that
 * reads process.env for settings (project.ts reads serverless.yml).
 */
import { DEFAULT_WORKSPACE } from '../../shared/config-protocol.ts'
import { ConfigError, UsageError } from '../../shared/errors.ts'
import type { ToolServiceSpec } from './tool-services.ts'
import { checkDeadLetterQueue } from './dead-letter-queue.ts'
import { LOG_LEVELS, type LogLevel } from '../support/logger.ts'

/** Invokers that run handlers on this machine, from their `handler:` files. */
export const LOCAL_INVOKERS = ['worker-threads', 'in-process'] as const
export const INVOKERS = [...LOCAL_INVOKERS, 'lambda'] as const
export type InvokerKind = (typeof INVOKERS)[number]

/** On the embedded broker nothing else can reach the bridge, so HTTP is on by default. */
export const EMBEDDED_DEFAULT_PORT = 8080

export interface Settings {
  broker: string | undefined
  /** The HTTP gateway's port; undefined: no gateway. */
  port: number | undefined
  host: string
  invoker: InvokerKind
  drainTimeoutMs: number
  logLevel: LogLevel
  lambda: LambdaSettings
  /** The environment HTTP functions' secret headers (`headersFromEnv`) are read from. */
  env: Env
  /** TrustGraph workspace that `register` writes to. */
  workspace: string
  /** Bearer token the gateway's /mcp requires; undefined: none. */
  mcpToken: string | undefined
  /** Bearer token the gateway's /tools (and /mcp, without mcpToken) requires; undefined: none. */
  httpToken: string | undefined
  /** /mcp takes OAuth access tokens of this issuer instead of a static token (bridge/http/oauth.ts); undefined: not. */
  mcpOAuth: McpOAuthSettings | undefined
  limits: Limits
  /** How many worker threads each function keeps (the `worker-threads` invoker). */
  workers: WorkerPoolSettings
  /** After this long without a request, the heap is collected in full once and its free pages given back (bridge/support/idle-collection.ts); 0: never. */
  releaseMemoryAfterMs: number
  /** Who may call the HTTP gateway, and how many at once. */
  gateway: GatewaySettings
  /** Error messages on the wire keep host paths (they are always logged in full). */
  debug: boolean
  pulsar: PulsarSettings
  /** Defaults of the services' delivery settings (each may set its own in serverless.yml). */
  delivery: DeliveryDefaults
}

/** Stale requests, redeliveries and dead letters, for services that do not say (bridge/core/delivery-guard.ts). */
export interface DeliveryDefaults {
  /** A request older than this is answered `expired` without invoking; 0: any age is invoked. */
  maxAgeMs: number
  /** Answers remembered per service for redeliveries; 0: none. */
  answeredMemorySize: number
  answeredMemoryTtlMs: number
  /** Where requests that cannot be answered go; undefined: they are logged and dropped. */
  deadLetterQueue: string | undefined
  /** The answered-once store every replica shares (--answered-store); undefined: each process's own memory. */
  answeredStore?: SharedStoreSettings | undefined
}

export interface SharedStoreSettings {
  /** redis://... or rediss://... (Redis, Valkey) */
  url: string
  /** How long a claim holds a request if its replica dies without answering it. */
  leaseMs: number
}

export const DEFAULT_ANSWERED_STORE_LEASE_SECONDS = 30

/**
 * TrustGraph's tool-service client waits 600 s for an answer
 * (ToolServiceClient.call(timeout=600) in trustgraph-base): a request older
 * than that has no caller left, and one younger may still have one.
 */
export const DEFAULT_MAX_AGE_SECONDS = 600
export const DEFAULT_ANSWERED_MEMORY_SIZE = 10_000
/** As long as a request can still be invoked: a redelivery later than that is expired anyway. */
export const DEFAULT_ANSWERED_MEMORY_TTL_SECONDS = DEFAULT_MAX_AGE_SECONDS

/** /mcp as an OAuth resource server: `--mcp-auth oauth`. */
export interface McpOAuthSettings {
  /** The authorization server's issuer identifier (`iss` of its tokens). */
  issuer: string
  /** This resource's identifier, as tokens name it in `aud`: the public URL of /mcp. */
  audience: string
  /** Scopes every token must carry; none: any token of the issuer for this audience. */
  scopes: string[]
  /** The issuer's key set; undefined: the `jwks_uri` of its metadata. */
  jwksUrl: string | undefined
  /**
   * Also take tokens whose header has no `typ`, or `typ: JWT`, for issuers that do not mark their
   * access tokens `at+jwt` (RFC 9068); any other type (an ID token's, `dpop+jwt`) is still refused.
   */
  allowUntypedTokens: boolean
}

export const MCP_AUTH_KINDS = ['token', 'oauth'] as const

/** What one bridge takes on at most (each has a flag). */
export interface Limits {
  /** Requests over this many bytes get a `too-large` error without invoking; undefined: the broker's message limit. */
  maxRequestBytes: number | undefined
  /** Bytes one invocation may stream before it is cut with `too-large`; undefined: the invokers' default (20 MiB). */
  maxStreamBytes: number | undefined
  /**
   * Requests in flight across all services: the sum of their `concurrency`
   * (the broker's prefetch) may not exceed it, so that the bridge holds at
   * most this many and the rest wait in the broker's queues.
   */
  maxInFlight: number
}

export const DEFAULT_MAX_IN_FLIGHT = 1024

/**
 * Worker threads are started on demand, up to a function's `concurrency`;
 * those idle longer than `idleTimeoutMs` are ended, down to `warm` per
 * function, as Lambda keeps a warm environment and lets the rest go.
 */
export interface WorkerPoolSettings {
  /** Environments of each function kept however long they idle. */
  warm: number
  idleTimeoutMs: number
}

/** As serverless-offline's terminateIdleLambdaTime. */
export const DEFAULT_WORKER_IDLE_TIMEOUT_SECONDS = 60
/** None, as Lambda keeps none: a function is cold until its first call and after the idle timeout. */
export const DEFAULT_WARM_WORKERS = 0

/** Long enough that a burst has ended, short enough that an idle bridge soon shrinks. */
export const DEFAULT_RELEASE_MEMORY_AFTER_SECONDS = 10

/** The HTTP gateway's own guards (bridge/http/). */
export interface GatewaySettings {
  /** Host names (besides IP addresses, `localhost` and the listen address) that /tools and /mcp answer; `*`: any. */
  allowedHosts: string[]
  /** Origins (`scheme://host[:port]`) whose browser requests /tools and /mcp accept; none by default. */
  allowedOrigins: string[]
  /** Serve /tools or /mcp without a token on a non-loopback address instead of refusing to start. */
  allowUnauthenticated: boolean
  /** HTTP calls (/tools/<tool>, /mcp) answered at once; more get 429 with Retry-After. */
  maxInFlight: number
  /** How long an MCP call or stream may stay quiet before a progress notification or keep-alive comment goes out. */
  mcpHeartbeatMs: number
  /** An MCP call of a client that declares Tasks, still running after this long, becomes a task. */
  mcpTaskAfterMs: number
  /** How long a finished MCP task's result is kept. */
  mcpTaskTtlMs: number
  /** MCP tasks held at once; past it, calls run as ordinary ones. */
  mcpMaxTasks: number
}

export const DEFAULT_GATEWAY_MAX_IN_FLIGHT = 128
export const DEFAULT_MCP_HEARTBEAT_SECONDS = 15
/** Under the heartbeat, so a client without progress tokens is not left waiting on a silent request. */
export const DEFAULT_MCP_TASK_AFTER_SECONDS = 10
export const DEFAULT_MCP_TASK_TTL_SECONDS = 600
/** A day at most: results are held in memory. */
export const MAX_MCP_TASK_TTL_SECONDS = 86_400
export const DEFAULT_MCP_MAX_TASKS = 1000

export const PULSAR_CLIENTS = ['builtin', 'native'] as const
export type PulsarClientKind = (typeof PULSAR_CLIENTS)[number]

/** For pulsar:// brokers. */
export interface PulsarSettings {
  /** Token authentication; undefined: none. */
  token: string | undefined
  /** Advertised listener name for lookups (TrustGraph's --pulsar-listener). */
  listener: string | undefined
  /** The project's own TypeScript client, or the optional native `pulsar-client` addon. */
  client: PulsarClientKind
}

/** How the `lambda` invoker reaches Lambda. */
export interface LambdaSettings {
  /** The Lambda API, e.g. serverless-offline's `http://localhost:3002`; undefined: AWS's own endpoint. */
  endpoint: string | undefined
  /** undefined: the SDK's own lookup (AWS_REGION, then the shared config file). */
  region: string | undefined
  /** Fixed dummy credentials (a local endpoint ignores them); otherwise the SDK's standard credential chain. */
  dummyCredentials: boolean
  /** How long throttled (429) and failing (5xx) calls are retried before the request gets an error response. */
  retryWindowMs: number
}

export interface SettingFlags {
  broker?: string
  port?: string
  host?: string
  invoker?: string
  drainTimeout?: string
  logLevel?: string
  lambdaEndpoint?: string
  lambdaRetryWindow?: string
  workspace?: string
  mcpToken?: string
  httpToken?: string
  mcpAuth?: string
  mcpIssuer?: string
  mcpAudience?: string
  mcpScopes?: string
  mcpJwksUrl?: string
  mcpAllowUntypedTokens?: boolean
  maxRequestBytes?: string
  maxStreamBytes?: string
  maxInFlight?: string
  mcpHeartbeat?: string
  mcpTaskAfter?: string
  mcpTaskTtl?: string
  mcpMaxTasks?: string
  workerIdleTimeout?: string
  warmWorkers?: string
  releaseMemoryAfter?: string
  allowedHosts?: string
  allowedOrigins?: string
  allowUnauthenticated?: boolean
  maxHttpInFlight?: string
  debug?: boolean
  pulsarToken?: string
  pulsarListener?: string
  pulsarClient?: string
  maxAge?: string
  answeredMemorySize?: string
  answeredMemoryTtl?: string
  answeredStore?: string
  answeredStoreLease?: string
  deadLetterQueue?: string
}

export type Env = Record<string, string | undefined>

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(flag, `"${value}" must be one of ${allowed.join(', ')}`)
  }
  return value as T
}

function invokerKind(value: string): InvokerKind {
  // 0.2.0's name for worker threads: said plainly rather than taken silently.
  if (value === 'local')
    throw new UsageError('--invoker', '"local" is now called "worker-threads": use --invoker worker-threads')
  return oneOf('--invoker', value, INVOKERS)
}

function integer(flag: string, value: string, min: number, max: number): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < min || n > max)
    throw new UsageError(flag, `"${value}" must be an integer from ${min} to ${max}`)
  return n
}

function httpUrl(flag: string, value: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new UsageError(flag, `"${value}" is not a URL, e.g. http://localhost:3002`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(flag, `"${value}" must be an http:// or https:// URL`)
  return value
}

export const DEFAULT_LAMBDA_RETRY_WINDOW_SECONDS = 60

function resolveLambdaSettings(flags: SettingFlags, env: Env): LambdaSettings {
  const endpointValue = flags.lambdaEndpoint ?? (env.TOOLBRIDGE_LAMBDA_ENDPOINT || undefined)
  const endpoint = endpointValue === undefined ? undefined : httpUrl('--lambda-endpoint', endpointValue)
  const window = flags.lambdaRetryWindow ?? env.TOOLBRIDGE_LAMBDA_RETRY_WINDOW
  // A local endpoint (serverless-offline) needs no real credentials: don't make the SDK look for them.
  const dummyCredentials = endpoint !== undefined && !env.AWS_ACCESS_KEY_ID && !env.AWS_PROFILE
  return {
    endpoint,
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || (dummyCredentials ? 'us-east-1' : undefined),
    dummyCredentials,
    retryWindowMs:
      window === undefined
        ? DEFAULT_LAMBDA_RETRY_WINDOW_SECONDS * 1000
        : integer('--lambda-retry-window', window, 0, 7200) * 1000,
  }
}

function resolveLimits(flags: SettingFlags, env: Env): Limits {
  const maxRequest = flags.maxRequestBytes ?? env.TOOLBRIDGE_MAX_REQUEST_BYTES
  const maxStream = flags.maxStreamBytes ?? env.TOOLBRIDGE_MAX_STREAM_BYTES
  const maxInFlight = flags.maxInFlight ?? env.TOOLBRIDGE_MAX_IN_FLIGHT
  return {
    maxRequestBytes: maxRequest === undefined ? undefined : integer('--max-request-bytes', maxRequest, 1, 2 ** 31),
    maxStreamBytes: maxStream === undefined ? undefined : integer('--max-stream-bytes', maxStream, 1, 2 ** 40),
    maxInFlight:
      maxInFlight === undefined ? DEFAULT_MAX_IN_FLIGHT : integer('--max-in-flight', maxInFlight, 1, 1_000_000),
  }
}

function resolveWorkerPool(flags: SettingFlags, env: Env): WorkerPoolSettings {
  const idle = flags.workerIdleTimeout ?? env.TOOLBRIDGE_WORKER_IDLE_TIMEOUT
  const warm = flags.warmWorkers ?? env.TOOLBRIDGE_WARM_WORKERS
  return {
    warm: warm === undefined ? DEFAULT_WARM_WORKERS : integer('--warm-workers', warm, 0, 1024),
    idleTimeoutMs:
      (idle === undefined ? DEFAULT_WORKER_IDLE_TIMEOUT_SECONDS : integer('--worker-idle-timeout', idle, 0, 86_400)) *
      1000,
  }
}

function resolveReleaseMemoryAfter(flags: SettingFlags, env: Env): number {
  const after = flags.releaseMemoryAfter ?? env.TOOLBRIDGE_RELEASE_MEMORY_AFTER
  return (
    (after === undefined ? DEFAULT_RELEASE_MEMORY_AFTER_SECONDS : integer('--release-memory-after', after, 0, 86_400)) *
    1000
  )
}

const list = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')

function resolveGatewaySettings(flags: SettingFlags, env: Env): GatewaySettings {
  const maxInFlight = flags.maxHttpInFlight ?? env.TOOLBRIDGE_MAX_HTTP_IN_FLIGHT
  const heartbeat = flags.mcpHeartbeat ?? env.TOOLBRIDGE_MCP_HEARTBEAT
  const taskAfter = flags.mcpTaskAfter ?? env.TOOLBRIDGE_MCP_TASK_AFTER
  const taskTtl = flags.mcpTaskTtl ?? env.TOOLBRIDGE_MCP_TASK_TTL
  const maxTasks = flags.mcpMaxTasks ?? env.TOOLBRIDGE_MCP_MAX_TASKS
  return {
    mcpHeartbeatMs:
      (heartbeat === undefined ? DEFAULT_MCP_HEARTBEAT_SECONDS : integer('--mcp-heartbeat', heartbeat, 1, 300)) * 1000,
    mcpTaskAfterMs:
      (taskAfter === undefined ? DEFAULT_MCP_TASK_AFTER_SECONDS : integer('--mcp-task-after', taskAfter, 0, 86_400)) *
      1000,
    mcpTaskTtlMs:
      (taskTtl === undefined
        ? DEFAULT_MCP_TASK_TTL_SECONDS
        : integer('--mcp-task-ttl', taskTtl, 1, MAX_MCP_TASK_TTL_SECONDS)) * 1000,
    mcpMaxTasks: maxTasks === undefined ? DEFAULT_MCP_MAX_TASKS : integer('--mcp-max-tasks', maxTasks, 1, 100_000),
    allowedHosts: list(flags.allowedHosts ?? env.TOOLBRIDGE_ALLOWED_HOSTS).map((host) => host.toLowerCase()),
    allowedOrigins: list(flags.allowedOrigins ?? env.TOOLBRIDGE_ALLOWED_ORIGINS).map((origin) => origin.toLowerCase()),
    allowUnauthenticated:
      flags.allowUnauthenticated ??
      (env.TOOLBRIDGE_ALLOW_UNAUTHENTICATED === '1' || env.TOOLBRIDGE_ALLOW_UNAUTHENTICATED === 'true'),
    maxInFlight:
      maxInFlight === undefined
        ? DEFAULT_GATEWAY_MAX_IN_FLIGHT
        : integer('--max-http-in-flight', maxInFlight, 1, 1_000_000),
  }
}

/** Refuses a URL no store speaks, at start rather than at the first request. */
function checkAnsweredStoreUrl(flag: string, url: string): string {
  let protocol: string
  try {
    protocol = new URL(url).protocol
  } catch {
    throw new UsageError(flag, `"${url.replace(/\/\/[^@/]*@/, '//***@')}" is not a URL (e.g. redis://127.0.0.1:6379)`)
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    throw new UsageError(flag, `"${protocol}" is not a store toolbridge speaks: redis:// or rediss:// (Redis, Valkey)`)
  }
  return url
}

function resolveAnsweredStore(flags: SettingFlags, env: Env): SharedStoreSettings | undefined {
  const url = flags.answeredStore ?? (env.TOOLBRIDGE_ANSWERED_STORE || undefined)
  const lease = flags.answeredStoreLease ?? env.TOOLBRIDGE_ANSWERED_STORE_LEASE
  if (url === undefined) {
    if (lease !== undefined)
      throw new UsageError('--answered-store-lease', 'is for a shared store: give --answered-store too')
    return undefined
  }
  return {
    url: checkAnsweredStoreUrl('--answered-store', url),
    leaseMs:
      (lease === undefined ? DEFAULT_ANSWERED_STORE_LEASE_SECONDS : integer('--answered-store-lease', lease, 1, 3600)) *
      1000,
  }
}

function resolveDeliveryDefaults(flags: SettingFlags, env: Env): DeliveryDefaults {
  const maxAge = flags.maxAge ?? env.TOOLBRIDGE_MAX_AGE
  const size = flags.answeredMemorySize ?? env.TOOLBRIDGE_ANSWERED_MEMORY_SIZE
  const ttl = flags.answeredMemoryTtl ?? env.TOOLBRIDGE_ANSWERED_MEMORY_TTL
  const deadLetterQueue = flags.deadLetterQueue ?? (env.TOOLBRIDGE_DEAD_LETTER_QUEUE || undefined)
  return {
    maxAgeMs: (maxAge === undefined ? DEFAULT_MAX_AGE_SECONDS : integer('--max-age', maxAge, 0, 86_400)) * 1000,
    answeredMemorySize:
      size === undefined ? DEFAULT_ANSWERED_MEMORY_SIZE : integer('--answered-memory-size', size, 0, 1_000_000),
    answeredMemoryTtlMs:
      (ttl === undefined ? DEFAULT_ANSWERED_MEMORY_TTL_SECONDS : integer('--answered-memory-ttl', ttl, 1, 86_400)) *
      1000,
    deadLetterQueue:
      deadLetterQueue === undefined ? undefined : checkDeadLetterQueue('--dead-letter-queue', deadLetterQueue),
    answeredStore: resolveAnsweredStore(flags, env),
  }
}

/** `--mcp-auth oauth` and what it needs; the OAuth flags without it, or with a static /mcp token, are refused. */
function resolveMcpOAuth(flags: SettingFlags, env: Env): McpOAuthSettings | undefined {
  const kind = oneOf('--mcp-auth', flags.mcpAuth ?? (env.TOOLBRIDGE_MCP_AUTH || 'token'), MCP_AUTH_KINDS)
  const given = {
    '--mcp-issuer': flags.mcpIssuer ?? (env.TOOLBRIDGE_MCP_ISSUER || undefined),
    '--mcp-audience': flags.mcpAudience ?? (env.TOOLBRIDGE_MCP_AUDIENCE || undefined),
    '--mcp-scopes': flags.mcpScopes ?? (env.TOOLBRIDGE_MCP_SCOPES || undefined),
    '--mcp-jwks-url': flags.mcpJwksUrl ?? (env.TOOLBRIDGE_MCP_JWKS_URL || undefined),
    '--mcp-allow-untyped-tokens':
      flags.mcpAllowUntypedTokens ??
      (['1', 'true'].includes(env.TOOLBRIDGE_MCP_ALLOW_UNTYPED_TOKENS ?? '') ? true : undefined),
  }
  if (kind === 'token') {
    const stray = Object.entries(given).find(([, value]) => value !== undefined)
    if (stray) throw new UsageError(stray[0], 'takes effect only with --mcp-auth oauth')
    return undefined
  }
  if (flags.mcpToken ?? env.TOOLBRIDGE_MCP_TOKEN)
    throw new UsageError('--mcp-token', 'cannot be used with --mcp-auth oauth: /mcp takes OAuth access tokens then')
  for (const flag of ['--mcp-issuer', '--mcp-audience'] as const)
    if (given[flag] === undefined) throw new UsageError(flag, 'is required with --mcp-auth oauth')
  const jwksUrl = given['--mcp-jwks-url']
  return {
    issuer: httpUrl('--mcp-issuer', given['--mcp-issuer']!),
    audience: httpUrl('--mcp-audience', given['--mcp-audience']!),
    scopes: (given['--mcp-scopes'] ?? '').split(/[\s,]+/).filter((scope) => scope !== ''),
    jwksUrl: jwksUrl === undefined ? undefined : httpUrl('--mcp-jwks-url', jwksUrl),
    allowUntypedTokens: given['--mcp-allow-untyped-tokens'] === true,
  }
}

/** Refuses services whose `concurrency` adds up to more than the in-flight cap, naming them. */
export function checkInFlightCap(services: ToolServiceSpec[], limits: Limits): void {
  const total = services.reduce((sum, s) => sum + s.concurrency, 0)
  if (total <= limits.maxInFlight) return
  const each = services.map((s) => `${s.id} ${s.concurrency}`).join(', ')
  throw new ConfigError(
    '--max-in-flight',
    `the services' concurrency adds up to ${total} (${each}), over the cap of ${limits.maxInFlight} requests in flight: lower their \`concurrency\` or raise --max-in-flight`,
  )
}

/**
 * Flags win over the environment (TOOLBRIDGE_BROKER, TOOLBRIDGE_PORT, ...), which wins over defaults.
 * `gateway: false` is for a command that only calls tools: it opens no HTTP gateway, whatever --port
 * or TOOLBRIDGE_PORT say.
 */
export function resolveSettings(
  flags: SettingFlags,
  env: Env = process.env,
  { gateway = true }: { gateway?: boolean } = {},
): Settings {
  const broker = flags.broker ?? (env.TOOLBRIDGE_BROKER || undefined)
  const port = gateway
    ? (flags.port ?? env.TOOLBRIDGE_PORT ?? (broker === undefined ? String(EMBEDDED_DEFAULT_PORT) : undefined))
    : undefined
  const drain = flags.drainTimeout ?? env.TOOLBRIDGE_DRAIN_TIMEOUT
  return {
    broker,
    // '' or 'off' turns HTTP off.
    port: port === undefined || port === '' || port === 'off' ? undefined : integer('--port', port, 0, 65535),
    host: flags.host ?? env.TOOLBRIDGE_HOST ?? '127.0.0.1',
    invoker: invokerKind(flags.invoker ?? env.TOOLBRIDGE_INVOKER ?? 'worker-threads'),
    drainTimeoutMs: drain === undefined ? 30_000 : integer('--drain-timeout', drain, 0, 3600) * 1000,
    logLevel: oneOf('--log-level', flags.logLevel ?? env.TOOLBRIDGE_LOG_LEVEL ?? 'info', LOG_LEVELS),
    lambda: resolveLambdaSettings(flags, env),
    env,
    workspace: nonEmpty('--workspace', flags.workspace ?? env.TOOLBRIDGE_WORKSPACE ?? DEFAULT_WORKSPACE),
    mcpToken: flags.mcpToken ?? (env.TOOLBRIDGE_MCP_TOKEN || undefined),
    httpToken: flags.httpToken ?? (env.TOOLBRIDGE_HTTP_TOKEN || undefined),
    mcpOAuth: resolveMcpOAuth(flags, env),
    limits: resolveLimits(flags, env),
    workers: resolveWorkerPool(flags, env),
    releaseMemoryAfterMs: resolveReleaseMemoryAfter(flags, env),
    gateway: resolveGatewaySettings(flags, env),
    debug: flags.debug ?? (env.TOOLBRIDGE_DEBUG === '1' || env.TOOLBRIDGE_DEBUG === 'true'),
    pulsar: {
      token: flags.pulsarToken ?? (env.PULSAR_TOKEN || undefined),
      listener: flags.pulsarListener ?? (env.TOOLBRIDGE_PULSAR_LISTENER || undefined),
      client: oneOf('--pulsar-client', flags.pulsarClient ?? env.TOOLBRIDGE_PULSAR_CLIENT ?? 'builtin', PULSAR_CLIENTS),
    },
    delivery: resolveDeliveryDefaults(flags, env),
  }
}

/** `start --register`: whether to register once serving, and how long to wait for the configuration service. */
export function resolveRegistration(
  flags: { register?: boolean; timeout?: string },
  env: Env = process.env,
): { register: boolean; timeoutMs: number } {
  const timeout = flags.timeout ?? env.TOOLBRIDGE_REGISTER_TIMEOUT
  const seconds = timeout === undefined ? DEFAULT_REGISTER_TIMEOUT_SECONDS : Number(timeout)
  if (!(seconds > 0)) throw new UsageError('--timeout', `"${timeout}" must be a positive number of seconds`)
  return {
    register: flags.register ?? (env.TOOLBRIDGE_REGISTER === '1' || env.TOOLBRIDGE_REGISTER === 'true'),
    timeoutMs: seconds * 1000,
  }
}

export const DEFAULT_REGISTER_TIMEOUT_SECONDS = 60

function nonEmpty(flag: string, value: string): string {
  if (value.trim() === '') throw new UsageError(flag, 'must not be empty')
  return value
}

/**
 * Where `toolbridge invoke` sends a call: through a broker; through the HTTP
 * gateway of a `toolbridge start` (given, or the one on this machine's default
 * port when nothing says where functions run); or through a bridge of its own.
 */
export type InvokeRoute =
  | { via: 'broker'; broker: string }
  | { via: 'gateway'; url: string; fallBackToEmbedded: boolean }
  | { via: 'embedded' }

export function resolveInvokeRoute(flags: SettingFlags & { url?: string }, env: Env = process.env): InvokeRoute {
  const broker = flags.broker ?? (env.TOOLBRIDGE_BROKER || undefined)
  if (broker !== undefined) return { via: 'broker', broker }
  const url = flags.url ?? (env.TOOLBRIDGE_URL || undefined)
  if (url !== undefined) return { via: 'gateway', url: httpUrl('--url', url), fallBackToEmbedded: false }
  const saysWhereFunctionsRun = [
    flags.invoker,
    flags.lambdaEndpoint,
    env.TOOLBRIDGE_INVOKER,
    env.TOOLBRIDGE_LAMBDA_ENDPOINT,
  ].some(Boolean)
  if (saysWhereFunctionsRun) return { via: 'embedded' }
  const port =
    env.TOOLBRIDGE_PORT && /^\d+$/.test(env.TOOLBRIDGE_PORT) ? env.TOOLBRIDGE_PORT : String(EMBEDDED_DEFAULT_PORT)
  return { via: 'gateway', url: `http://127.0.0.1:${port}`, fallBackToEmbedded: true }
}
