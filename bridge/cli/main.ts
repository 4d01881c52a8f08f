#!/usr/bin/env node
/**
 * toolbridge: serve the tool services of serverless.yml, call them, and
 * print their TrustGraph descriptors. Importing this module builds the
 * program without running it (scripts/reference.ts reads it); `run()`
 * parses the command line, as the bin does, and so does running this file.
 */
import { Command, CommanderError, Option } from 'commander'
import { isRecord, messageOf, ToolbridgeError, UsageError } from '../../shared/errors.ts'
import type { QueueStyle } from '../../shared/queues.ts'
import { ToolCallError } from '../trustgraph/request-client.ts'
import {
  DEFAULT_ANSWERED_MEMORY_SIZE,
  DEFAULT_ANSWERED_MEMORY_TTL_SECONDS,
  DEFAULT_ANSWERED_STORE_LEASE_SECONDS,
  DEFAULT_GATEWAY_MAX_IN_FLIGHT,
  DEFAULT_MCP_MAX_TASKS,
  DEFAULT_MCP_TASK_AFTER_SECONDS,
  DEFAULT_MCP_TASK_TTL_SECONDS,
  MAX_MCP_TASK_TTL_SECONDS,
  DEFAULT_MAX_AGE_SECONDS,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_REGISTER_TIMEOUT_SECONDS,
  DEFAULT_WARM_WORKERS,
  DEFAULT_RELEASE_MEMORY_AFTER_SECONDS,
  DEFAULT_WORKER_IDLE_TIMEOUT_SECONDS,
  EMBEDDED_DEFAULT_PORT,
  resolveInvokeRoute,
  resolveRegistration,
  resolveSettings,
  type SettingFlags,
} from '../project/settings.ts'
import { LOG_LEVELS } from '../support/logger.ts'
import { DEFAULT_MAX_FOLDERS } from '../dev/project-watcher.ts'
import {
  addBrokerOptions,
  addInvokerOptions,
  invokerOption,
  lambdaEndpointOption,
  mcpEndpoint,
  mcpTokenOption,
  mcpUrlOption,
  queuesOption,
  timeoutMs,
  timeoutOption,
  workspaceOption,
} from './options.ts'
import { addTrustgraphCommands, registerOn } from './trustgraph-commands.ts'
import { addScaffoldCommands } from './scaffold-commands.ts'
import { addDeadLetterCommands } from './dead-letter-commands.ts'
import { example } from './examples.ts'
import { PACKAGE_VERSION } from '../support/package-root.ts'

// What a command needs beyond its options is imported when it runs: `--help`
// and the commands that only read serverless.yml never load a broker client,
// the bridge, the HTTP gateway or the AWS SDK.
const loadProject = async (file: string) => (await import('../project/project.ts')).loadProject(file)

export const program = new Command('toolbridge')
  .description('Run agent tools as Lambda-style functions behind TrustGraph tool-service queues')
  .version(PACKAGE_VERSION, '-V, --version')
  .addOption(
    new Option('-c, --config <file>', 'serverless.yml to read').env('TOOLBRIDGE_CONFIG').default('serverless.yml'),
  )
  .exitOverride()

addInvokerOptions(addBrokerOptions(program.command('start').description('serve every tool service in serverless.yml')))
  .option(
    '-p, --port <port>',
    `HTTP port for /tools, or "off" (env TOOLBRIDGE_PORT); default: ${EMBEDDED_DEFAULT_PORT} on the embedded broker, off otherwise`,
  )
  .option('--host <host>', 'HTTP listen address (env TOOLBRIDGE_HOST; default 127.0.0.1)')
  .option(
    '--drain-timeout <seconds>',
    'on SIGINT/SIGTERM, how long to finish requests in flight (env TOOLBRIDGE_DRAIN_TIMEOUT; default 30)',
  )
  .option(
    '--max-request-bytes <bytes>',
    "requests larger than this get a too-large error (env TOOLBRIDGE_MAX_REQUEST_BYTES); default: the broker's message limit",
  )
  .option(
    '--max-stream-bytes <bytes>',
    'a streamed answer is cut with a too-large error past this many bytes (env TOOLBRIDGE_MAX_STREAM_BYTES); default: 20 MiB',
  )
  .option(
    '--max-in-flight <n>',
    `cap on requests in flight across all services: their concurrency may not add up to more (env TOOLBRIDGE_MAX_IN_FLIGHT; default ${DEFAULT_MAX_IN_FLIGHT})`,
  )
  .option(
    '--worker-idle-timeout <seconds>',
    `worker threads (--invoker worker-threads) idle this long are ended, down to --warm-workers per function (env TOOLBRIDGE_WORKER_IDLE_TIMEOUT; default ${DEFAULT_WORKER_IDLE_TIMEOUT_SECONDS})`,
  )
  .option(
    '--warm-workers <n>',
    `worker threads each function keeps however long they idle (env TOOLBRIDGE_WARM_WORKERS; default ${DEFAULT_WARM_WORKERS})`,
  )
  .option(
    '--release-memory-after <seconds>',
    `after this long without a request, collect the heap in full once and give its free memory back to the system; 0: never (env TOOLBRIDGE_RELEASE_MEMORY_AFTER; default ${DEFAULT_RELEASE_MEMORY_AFTER_SECONDS})`,
  )
  .option(
    '--max-age <seconds>',
    `requests that waited longer are answered "expired" without invoking; 0: any age (env TOOLBRIDGE_MAX_AGE; default ${DEFAULT_MAX_AGE_SECONDS}, TrustGraph's client timeout); a service's maxAge wins`,
  )
  .option(
    '--answered-memory-size <n>',
    `answers each service remembers, so that a redelivered request is answered again without invoking; 0: none (env TOOLBRIDGE_ANSWERED_MEMORY_SIZE; default ${DEFAULT_ANSWERED_MEMORY_SIZE})`,
  )
  .option(
    '--answered-memory-ttl <seconds>',
    `how long an answer is remembered (env TOOLBRIDGE_ANSWERED_MEMORY_TTL; default ${DEFAULT_ANSWERED_MEMORY_TTL_SECONDS})`,
  )
  .option(
    '--answered-store <url>',
    'a store every replica shares for the answered-once memory, redis://host:6379 (Redis or Valkey), so that a request runs once across replicas and restarts (env TOOLBRIDGE_ANSWERED_STORE); default: each process remembers its own',
  )
  .option(
    '--answered-store-lease <seconds>',
    `with --answered-store: how long a replica that died holds a request it was running before another may run it (env TOOLBRIDGE_ANSWERED_STORE_LEASE; default ${DEFAULT_ANSWERED_STORE_LEASE_SECONDS})`,
  )
  .option(
    '--dead-letter-queue <queue>',
    'persistent queue for requests that cannot be answered, e.g. flow:tg:toolbridge-dead-letters (env TOOLBRIDGE_DEAD_LETTER_QUEUE); default: none, they are logged and dropped',
  )
  .addOption(
    new Option('--log-level <level>', 'log level (env TOOLBRIDGE_LOG_LEVEL; default info)').choices(LOG_LEVELS),
  )
  .option(
    '--http-token <token>',
    'bearer token required on /tools and /mcp (env TOOLBRIDGE_HTTP_TOKEN); /healthz, /readyz and /metrics stay open',
  )
  .option(
    '--allowed-hosts <names>',
    'comma-separated Host names /tools and /mcp answer besides IP addresses and localhost, e.g. a container name; * for any (env TOOLBRIDGE_ALLOWED_HOSTS)',
  )
  .option(
    '--allowed-origins <origins>',
    "comma-separated browser origins (scheme://host:port) allowed to call /tools and /mcp besides the gateway's own and, on a loopback address, this machine's (env TOOLBRIDGE_ALLOWED_ORIGINS)",
  )
  .option(
    '--mcp-heartbeat <seconds>',
    'an MCP call with a progress token, or an SSE stream, quiet this long gets a progress notification or keep-alive comment (env TOOLBRIDGE_MCP_HEARTBEAT; default 15)',
  )
  .option(
    '--mcp-task-after <seconds>',
    `an MCP call of a client that declares the Tasks extension, still running this long, becomes a task; 0: at once (env TOOLBRIDGE_MCP_TASK_AFTER; default ${DEFAULT_MCP_TASK_AFTER_SECONDS})`,
  )
  .option(
    '--mcp-task-ttl <seconds>',
    `how long a finished MCP task's result is kept for tasks/get, at most ${MAX_MCP_TASK_TTL_SECONDS} (env TOOLBRIDGE_MCP_TASK_TTL; default ${DEFAULT_MCP_TASK_TTL_SECONDS})`,
  )
  .option(
    '--mcp-max-tasks <n>',
    `MCP tasks held at once, running and finished; past it, calls are answered as ordinary ones (env TOOLBRIDGE_MCP_MAX_TASKS; default ${DEFAULT_MCP_MAX_TASKS})`,
  )
  .option(
    '--allow-unauthenticated',
    'serve /tools or /mcp without a token on a non-loopback --host instead of refusing to start (env TOOLBRIDGE_ALLOW_UNAUTHENTICATED=1)',
  )
  .option(
    '--max-http-in-flight <n>',
    `HTTP calls answered at once; more get 429 (env TOOLBRIDGE_MAX_HTTP_IN_FLIGHT; default ${DEFAULT_GATEWAY_MAX_IN_FLIGHT})`,
  )
  .option(
    '--debug',
    'error answers keep host paths (env TOOLBRIDGE_DEBUG=1); by default they are shown relative to the project',
  )
  .option(
    '--register',
    "once serving, register the tools with TrustGraph's configuration service (the embedded one on the embedded broker; env TOOLBRIDGE_REGISTER=1)",
  )
  .option(
    '--timeout <seconds>',
    `with --register: how long to wait for the configuration service (env TOOLBRIDGE_REGISTER_TIMEOUT; default ${DEFAULT_REGISTER_TIMEOUT_SECONDS})`,
  )
  .option(
    '--console',
    'serve the web console at / on the HTTP port, behind --http-token when one is set (env TOOLBRIDGE_CONSOLE=1)',
  )
  .addOption(workspaceOption())
  .addOption(mcpTokenOption('bearer token /mcp requires instead of --http-token'))
  .addOption(
    new Option(
      '--mcp-auth <kind>',
      'how /mcp authenticates: token (the static bearer tokens) or oauth (access tokens of --mcp-issuer) (env TOOLBRIDGE_MCP_AUTH; default token)',
    ).choices(['token', 'oauth']),
  )
  .option('--mcp-issuer <url>', "with --mcp-auth oauth: the authorization server's issuer (env TOOLBRIDGE_MCP_ISSUER)")
  .option(
    '--mcp-audience <url>',
    'with --mcp-auth oauth: the public URL of /mcp, as tokens name it in `aud` (env TOOLBRIDGE_MCP_AUDIENCE)',
  )
  .option(
    '--mcp-scopes <scopes>',
    'with --mcp-auth oauth: comma-separated scopes every token must carry (env TOOLBRIDGE_MCP_SCOPES)',
  )
  .option(
    '--mcp-jwks-url <url>',
    "with --mcp-auth oauth: the issuer's key set, when its metadata does not give one (env TOOLBRIDGE_MCP_JWKS_URL)",
  )
  .option(
    '--mcp-allow-untyped-tokens',
    'with --mcp-auth oauth: also take tokens without typ "at+jwt" (no typ, or "JWT"), for issuers that omit it (env TOOLBRIDGE_MCP_ALLOW_UNTYPED_TOKENS=1)',
  )
  .addHelpText('after', example('toolbridge start --broker amqp://guest:guest@127.0.0.1:5672/'))
  .action(async (flags: SettingFlags & { register?: boolean; timeout?: string; console?: boolean }) => {
    const project = await loadProject(program.opts().config)
    const settings = resolveSettings(flags)
    const registration = resolveRegistration(flags)
    const withConsole = flags.console ?? ['1', 'true'].includes(process.env.TOOLBRIDGE_CONSOLE ?? '')
    const [{ createLogger }, { startRuntime }, { endpointGuards }, { redact }, { ConsoleFeed }] = await Promise.all([
      import('../support/logger.ts'),
      import('../runtime.ts'),
      import('../http/exposure.ts'),
      import('../transports/redact.ts'),
      import('../http/console/console-feed.ts'),
    ])
    const logger = createLogger(settings.logLevel)
    const runtime = await startRuntime(project, settings, {
      logger,
      console: withConsole ? new ConsoleFeed() : undefined,
    })
    const where = settings.broker === undefined ? 'the embedded broker' : redact(settings.broker)
    const lambdaAt = settings.invoker === 'lambda' ? ` at ${settings.lambda.endpoint ?? 'AWS'}` : ''
    console.log(`toolbridge: serving on ${where} with the ${settings.invoker} invoker${lambdaAt}`)
    for (const spec of project.services) {
      const tools = spec.tools.map((t) => t.name).join(', ')
      console.log(
        `  ${spec.id} (${spec.response}, concurrency ${spec.concurrency}): ${spec.requestQueue} -> ${spec.responseQueue}  tools: ${tools}`,
      )
    }
    if (runtime.gateway) {
      const url = runtime.gateway.url
      for (const { path, token, issuer } of endpointGuards(settings)) {
        const guard = issuer
          ? `OAuth access token from ${issuer} required`
          : token
            ? 'bearer token required'
            : `no token: open to anyone who reaches ${url}`
        console.log(`  ${path === '/mcp' ? 'MCP' : 'HTTP'}: ${url}${path} (${guard})`)
      }
      if (withConsole) console.log(`  console: ${consoleUrl(url, settings.httpToken)}`)
    }
    if (registration.register) {
      // The request queues are bound by now: an agent that reads these can reach the tools at once.
      const options = { workspace: settings.workspace, timeoutMs: registration.timeoutMs }
      const registered = await registerOn(await runtime.connectClient(), project.services, options).catch(
        async (err: unknown) => {
          await runtime.stop()
          throw err
        },
      )
      console.log(`  ${registered}`)
    }
    let stopping = false
    const stop = (signal: string) => {
      if (stopping) {
        console.error(`toolbridge: ${signal} again, exiting without draining`)
        process.exit(130)
      }
      stopping = true
      console.log(`toolbridge: ${signal}, finishing ${runtime.bridge.inFlight} request(s) in flight`)
      runtime.stop().then(
        () => process.exit(0),
        (err: unknown) => {
          console.error(`toolbridge: error while stopping: ${messageOf(err)}`)
          process.exit(1)
        },
      )
    }
    process.on('SIGINT', () => stop('SIGINT'))
    process.on('SIGTERM', () => stop('SIGTERM'))
  })

/** The console's address; a token goes in the fragment, which the browser keeps and never sends. */
const consoleUrl = (url: string, token: string | undefined) =>
  token === undefined ? `${url}/` : `${url}/#token=${encodeURIComponent(token)}`

program
  .command('dev')
  .description(
    'serve the tools on the embedded broker with the web console, reloading a function when its files change',
  )
  .option(
    '-p, --port <port>',
    `HTTP port of the console and /tools (env TOOLBRIDGE_PORT; default ${EMBEDDED_DEFAULT_PORT})`,
  )
  .option('--host <host>', 'HTTP listen address (env TOOLBRIDGE_HOST; default 127.0.0.1)')
  .option('--http-token <token>', 'bearer token the console, /tools and /mcp require (env TOOLBRIDGE_HTTP_TOKEN)')
  .addOption(
    new Option('--log-level <level>', 'log level (env TOOLBRIDGE_LOG_LEVEL; default info)').choices(LOG_LEVELS),
  )
  .option(
    '--follow-links',
    `watch the folders symbolic links in the project point to (at most ${DEFAULT_MAX_FOLDERS} folders watched in all)`,
  )
  .addHelpText('after', example('toolbridge dev --port 8080'))
  .action(async (flags: SettingFlags & { followLinks?: boolean }) => {
    // Worker threads: a function's new code loads in a new worker, which an in-process module cache cannot do.
    const settings = { ...resolveSettings({ ...flags, invoker: 'worker-threads' }), broker: undefined }
    if (settings.port === undefined) throw new UsageError('--port', 'dev serves the console over HTTP: give a port')
    const [{ createLogger }, { startDev }] = await Promise.all([
      import('../support/logger.ts'),
      import('../dev/dev-session.ts'),
    ])
    const logger = createLogger(settings.logLevel)
    const session = await startDev(program.opts().config, settings, {
      logger,
      say: (line) => console.log(line),
      watch: { followLinks: flags.followLinks === true },
    })
    for (const spec of session.project.services)
      console.log(`  ${spec.id} (${spec.response}): ${spec.tools.map((t) => t.name).join(', ')}`)
    console.log(`toolbridge dev: console at ${consoleUrl(session.url, settings.httpToken)}`)
    let stopping = false
    const stop = () => {
      if (stopping) process.exit(130)
      stopping = true
      session.stop().then(
        () => process.exit(0),
        (err: unknown) => {
          console.error(`toolbridge: error while stopping: ${messageOf(err)}`)
          process.exit(1)
        },
      )
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })

const collect = (value: string, previous: string[]) => [...previous, value]

/**
 * Set by a command that is over once its action returns: a function that
 * ran in this process and timed out may still hold timers, which must not
 * keep the command running after its answer is out.
 */
let endWhenDone = false

const invokeCommand = program
  .command('invoke <tool>')
  .description('call a tool through the broker and print its answer')
  .option('-a, --arg <key=value>', 'an argument (repeatable)', collect, [] as string[])
  .option('--args <json>', 'arguments as a JSON object')
  .option('-u, --user <user>', 'user to send')
  .option('-s, --stream', 'print chunks as they arrive')
  .addOption(timeoutOption('how long to wait for the answer', 600))
addInvokerOptions(addBrokerOptions(invokeCommand))
  .option(
    '--url <url>',
    'the HTTP endpoint of a running `toolbridge start` to call through (env TOOLBRIDGE_URL); default: the one on this machine at 127.0.0.1:8080 (port: env TOOLBRIDGE_PORT) when it serves this serverless.yml and neither --broker nor --invoker is given',
  )
  .option('--http-token <token>', "the bearer token of that `toolbridge start`'s /tools (env TOOLBRIDGE_HTTP_TOKEN)")
  .addHelpText('after', example('toolbridge invoke tell-joke --arg topic=cats'))
  .action(
    async (
      toolName: string,
      flags: SettingFlags & {
        arg: string[]
        args?: string
        user?: string
        stream?: boolean
        timeout: string
        url?: string
      },
    ) => {
      endWhenDone = true
      const project = await loadProject(program.opts().config)
      const spec = project.services.find((s) => s.tools.some((t) => t.name === toolName))
      const tool = spec?.tools.find((t) => t.name === toolName)
      if (!spec || !tool) {
        const known = project.services.flatMap((s) => s.tools.map((t) => t.name)).join(', ')
        throw new ToolbridgeError('config', `unknown tool "${toolName}" (tools: ${known})`)
      }
      const args = parseArguments(flags.arg, flags.args)
      const call = { user: flags.user, config: tool.config, arguments: args }
      const printChunk = flags.stream ? (chunk: string) => void process.stdout.write(chunk) : () => {}
      // A stream service's answer is all its chunks: wait for them whether or not they are printed as they come.
      const options = {
        timeoutMs: timeoutMs(flags.timeout),
        onChunk: flags.stream || spec.response === 'stream' ? printChunk : undefined,
      }
      const printAnswer = (answer: string) => void process.stdout.write(flags.stream ? '\n' : answer + '\n')
      const say = (route: string) => console.error(`toolbridge: via ${route}`)

      const settings = resolveSettings(flags, process.env, { gateway: false })
      const route = resolveInvokeRoute(flags)
      if (route.via === 'gateway') {
        const { callThroughGateway, probeGateway } = await import('./gateway-client.ts')
        const token = settings.httpToken
        const probe = await probeGateway(route.url, token)
        const throughGateway = async () => {
          say(route.url)
          printAnswer(await callThroughGateway(route.url, toolName, call, { ...options, token }))
        }
        if (!route.fallBackToEmbedded) {
          if (probe.found === 'tools' && probe.names.includes(toolName)) return throughGateway()
          const why =
            probe.found === 'tools'
              ? `does not serve "${toolName}"`
              : probe.found === 'token-required'
                ? 'wants a bearer token: give --http-token (env TOOLBRIDGE_HTTP_TOKEN)'
                : 'no toolbridge answers there'
          throw new ToolbridgeError('config', `--url ${route.url}: ${why}`)
        }
        // The bridge on this machine's default port may be another project's: use it only if it serves the tool asked
        // for and no tool this project lacks (one added since it started, by `add function`, is no reason to refuse).
        const hint = `call it with --url ${route.url}, or run the tool here with --invoker worker-threads`
        if (probe.found === 'token-required') {
          throw new ToolbridgeError(
            'config',
            `the toolbridge at ${route.url} wants a bearer token: give --http-token (env TOOLBRIDGE_HTTP_TOKEN), or run the tool here with --invoker worker-threads`,
          )
        }
        if (probe.found === 'tools') {
          const ours = project.services.flatMap((s) => s.tools.map((t) => t.name))
          if (probe.names.includes(toolName) && probe.names.every((name) => ours.includes(name))) {
            return throughGateway()
          }
          const difference = toolsDifference(ours, probe.names)
          throw new ToolbridgeError(
            'config',
            `the toolbridge at ${route.url} does not serve ${program.opts().config} (${difference}): ${hint}`,
          )
        }
      }
      // Through the broker; without one (and no running bridge to go through), from an embedded bridge in this process.
      const [{ connectToTools }, { RequestClient }, { redact }] = await Promise.all([
        import('./connect.ts'),
        import('../trustgraph/request-client.ts'),
        import('../transports/redact.ts'),
      ])
      say(
        settings.broker === undefined
          ? `an embedded bridge in this process (${settings.invoker} invoker)`
          : redact(settings.broker),
      )
      const tools = await connectToTools(project, settings)
      const client = new RequestClient(tools.transport, spec)
      try {
        await client.start()
        printAnswer(await client.call(call, options))
      } finally {
        await client.close()
        await tools.close()
      }
    },
  )

/** How the tools a bridge serves differ from the project's, in a few words. */
function toolsDifference(ours: string[], served: string[]): string {
  const few = (names: string[]) =>
    names.length > 4 ? `${names.slice(0, 4).join(', ')} and ${names.length - 4} more` : names.join(', ')
  const missing = ours.filter((name) => !served.includes(name))
  const extra = served.filter((name) => !ours.includes(name))
  const parts = [
    missing.length > 0 ? `it lacks ${few(missing)}` : '',
    extra.length > 0 ? `it also serves ${few(extra)}` : '',
  ].filter(Boolean)
  return parts.join('; ')
}

program
  .command('descriptors')
  .description('print the tool-service and tool config objects for TrustGraph')
  .addOption(queuesOption())
  .addOption(mcpUrlOption())
  .addOption(mcpTokenOption('auth-token for the `mcp` entries'))
  .addHelpText('after', example('toolbridge descriptors --queues pulsar'))
  .action(async (flags: { queues: QueueStyle; mcpUrl?: string; mcpToken?: string }) => {
    const project = await loadProject(program.opts().config)
    const { descriptors } = await import('../project/descriptors.ts')
    const mcp = mcpEndpoint(flags.mcpUrl, resolveSettings({ mcpToken: flags.mcpToken }).mcpToken)
    console.log(JSON.stringify(descriptors(project.services, flags.queues, mcp), null, 2))
  })

addTrustgraphCommands(program)

program
  .command('check')
  .description("check that each tool service's function can be called, without calling it (Lambda: GetFunction)")
  .addOption(invokerOption())
  .addOption(lambdaEndpointOption())
  .addHelpText('after', example('toolbridge check --invoker lambda'))
  .action(async (flags: SettingFlags) => {
    const project = await loadProject(program.opts().config)
    const { checkFunctions } = await import('./check.ts')
    const results = await checkFunctions(project, resolveSettings(flags, process.env, { gateway: false }))
    for (const r of results) console.log(`${r.ok ? 'ok ' : 'BAD'}  ${r.service}  ${r.target}: ${r.detail}`)
    const bad = results.filter((r) => !r.ok).length
    if (bad > 0)
      throw new ToolbridgeError(
        'config',
        `${bad} of ${results.length} function${results.length > 1 ? 's' : ''} cannot be called`,
      )
  })

addScaffoldCommands(program)
addDeadLetterCommands(program, () => program.opts().config)

function parseArguments(pairs: string[], json: string | undefined): Record<string, unknown> {
  let args: Record<string, unknown> = {}
  if (json !== undefined) {
    let parsed: unknown
    try {
      parsed = JSON.parse(json)
    } catch {
      throw new UsageError('--args', 'not valid JSON')
    }
    if (!isRecord(parsed)) throw new UsageError('--args', 'must be a JSON object')
    args = parsed
  }
  for (const pair of pairs) {
    const eq = pair.indexOf('=')
    if (eq <= 0) throw new UsageError(`--arg "${pair}"`, 'expected key=value')
    args[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return args
}

/** Runs the command line's command; an error becomes one line on stderr and the exit code. */
export async function run(): Promise<void> {
  try {
    await program.parseAsync()
  } catch (err) {
    // exitCode rather than exit(): let stdout drain when piped.
    if (err instanceof CommanderError) {
      // Commander has printed its own one-line message (or the help).
      process.exitCode = err.exitCode === 0 ? 0 : 2
    } else if (err instanceof UsageError) {
      console.error(`toolbridge: ${err.message}`)
      process.exitCode = 2
    } else if (err instanceof ToolCallError) {
      console.error(`error: ${err.type}: ${err.message}`)
      process.exitCode = 1
    } else {
      console.error(`toolbridge: ${messageOf(err)}`)
      process.exitCode = 1
    }
  }
  if (endWhenDone) process.stdout.write('', () => process.exit())
}

if (import.meta.main) await run()
