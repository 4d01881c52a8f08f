#!/usr/bin/env node
/**
 * toolbridge: serve the tool services of serverless.yml, call them, and
 * print their TrustGraph descriptors.
 */
import { Command, CommanderError, Option } from 'commander'
import { descriptors } from '../project/tool-services.ts'
import { isRecord, ToolbridgeError } from '../../shared/errors.ts'
import { QUEUE_STYLES, type QueueStyle } from '../../shared/queues.ts'
import { checkFunctions } from './check.ts'
import { RequestClient, ToolCallError } from '../trustgraph/request-client.ts'
import { DEFAULT_MAX_IN_FLIGHT, EMBEDDED_DEFAULT_PORT, INVOKERS, loadProject, PULSAR_CLIENTS, type PulsarSettings, resolveInvokeRoute, resolveSettings, type SettingFlags } from '../project/settings.ts'
import { callThroughGateway, gatewayTools } from './gateway-client.ts'
import { createLogger, LOG_LEVELS } from '../support/logger.ts'
import { startRuntime } from '../runtime.ts'
import { addTrustgraphCommands, mcpEndpoint, mcpTokenOption, mcpUrlOption, registerOn, workspaceOption } from './trustgraph-commands.ts'
import { createTransport } from '../transports/create-transport.ts'
import { addScaffoldCommands } from './init.ts'
import { redact } from '../transports/redact.ts'

const program = new Command('toolbridge')
  .description('Run agent tools as Lambda-style functions behind TrustGraph tool-service queues')
  .option('-c, --config <file>', 'serverless.yml to read', 'serverless.yml')
  .exitOverride()

const brokerOption = () =>
  new Option('-b, --broker <url>', 'broker URL (env TOOLBRIDGE_BROKER); default: the embedded broker')
const invokerOption = () =>
  new Option('--invoker <kind>', 'where functions run (env TOOLBRIDGE_INVOKER)').choices(INVOKERS)
const lambdaEndpointOption = () =>
  new Option(
    '--lambda-endpoint <url>',
    'with --invoker lambda: the Lambda API to call, e.g. http://localhost:3002 for serverless-offline (env TOOLBRIDGE_LAMBDA_ENDPOINT); default: AWS, with the standard credential chain',
  )
// For pulsar:// brokers: token, advertised listener, and which client library.
const pulsarTokenOption = () => new Option('--pulsar-token <token>', 'with a pulsar:// broker: token for its token authentication (env PULSAR_TOKEN)')
const pulsarListenerOption = () =>
  new Option('--pulsar-listener <name>', "with a pulsar:// broker: the advertised listener to look topics up for (env TOOLBRIDGE_PULSAR_LISTENER), as TrustGraph's --pulsar-listener")
const pulsarClientOption = () =>
  new Option('--pulsar-client <kind>', 'with a pulsar:// broker: the built-in TypeScript client, or the optional native pulsar-client addon (env TOOLBRIDGE_PULSAR_CLIENT; default builtin)').choices(PULSAR_CLIENTS)
const lambdaRetryWindowOption = () =>
  new Option(
    '--lambda-retry-window <seconds>',
    'with --invoker lambda: how long throttled or failing calls are retried before answering with an error (env TOOLBRIDGE_LAMBDA_RETRY_WINDOW; default 60)',
  )

program
  .command('start')
  .description('serve every tool service in serverless.yml')
  .addOption(brokerOption())
  .addOption(pulsarTokenOption())
  .addOption(pulsarListenerOption())
  .addOption(pulsarClientOption())
  .addOption(invokerOption())
  .addOption(lambdaEndpointOption())
  .addOption(lambdaRetryWindowOption())
  .option('-p, --port <port>', `HTTP port for /tools, or "off" (env TOOLBRIDGE_PORT); default: ${EMBEDDED_DEFAULT_PORT} on the embedded broker, off otherwise`)
  .option('--host <host>', 'HTTP listen address (env TOOLBRIDGE_HOST)', undefined)
  .option('--drain-timeout <seconds>', 'on SIGINT/SIGTERM, how long to finish requests in flight')
  .option('--max-request-bytes <bytes>', "requests larger than this get a too-large error (env TOOLBRIDGE_MAX_REQUEST_BYTES); default: the broker's message limit")
  .option(
    '--max-in-flight <n>',
    `cap on requests in flight across all services: their concurrency may not add up to more (env TOOLBRIDGE_MAX_IN_FLIGHT; default ${DEFAULT_MAX_IN_FLIGHT})`,
  )
  .addOption(new Option('--log-level <level>', 'log level (env TOOLBRIDGE_LOG_LEVEL)').choices(LOG_LEVELS))
  .option('--http-token <token>', 'bearer token required on /tools and /mcp (env TOOLBRIDGE_HTTP_TOKEN); /healthz, /readyz and /metrics stay open')
  .option('--debug', 'error answers keep host paths (env TOOLBRIDGE_DEBUG=1); by default they are shown relative to the project')
  .option('--register', "once serving, register the tools with TrustGraph's configuration service (the embedded one on the embedded broker)")
  .addOption(workspaceOption())
  .addOption(mcpTokenOption('bearer token that /mcp requires'))
  .action(async (flags: SettingFlags & { register?: boolean }) => {
    const project = loadProject(program.opts().config)
    const settings = resolveSettings(flags)
    const logger = createLogger(settings.logLevel)
    const runtime = await startRuntime(project, settings, { logger })
    const where = settings.broker === undefined ? 'the embedded broker' : redact(settings.broker)
    const lambdaAt = settings.invoker === 'lambda' ? ` at ${settings.lambda.endpoint ?? 'AWS'}` : ''
    console.log(`toolbridge: serving on ${where} with the ${settings.invoker} invoker${lambdaAt}`)
    for (const spec of project.services) {
      const tools = spec.tools.map((t) => t.name).join(', ')
      console.log(`  ${spec.id} (${spec.response}, concurrency ${spec.concurrency}): ${spec.requestQueue} -> ${spec.responseQueue}  tools: ${tools}`)
    }
    if (runtime.gateway) console.log(`  HTTP: ${runtime.gateway.url}/tools`)
    if (runtime.gateway) console.log(`  MCP: ${runtime.gateway.url}/mcp${settings.mcpToken ? ' (bearer token required)' : ''}`)
    if (flags.register) {
      // The request queues are bound by now: an agent that reads these can reach the tools at once.
      const registered = await registerOn(await runtime.connectClient(), project.services, { workspace: settings.workspace }).catch(async (err: Error) => {
        await runtime.stop()
        throw err
      })
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
        (err: Error) => {
          console.error(`toolbridge: error while stopping: ${err.message}`)
          process.exit(1)
        },
      )
    }
    process.on('SIGINT', () => stop('SIGINT'))
    process.on('SIGTERM', () => stop('SIGTERM'))
  })

const collect = (value: string, previous: string[]) => [...previous, value]

program
  .command('invoke <tool>')
  .description('call a tool through the broker and print its answer')
  .option('-a, --arg <key=value>', 'an argument (repeatable)', collect, [] as string[])
  .option('--args <json>', 'arguments as a JSON object')
  .option('-u, --user <user>', 'user to send')
  .option('-s, --stream', 'print chunks as they arrive')
  .option('--timeout <seconds>', 'how long to wait for the answer', '600')
  .addOption(brokerOption())
  .addOption(pulsarTokenOption())
  .addOption(pulsarListenerOption())
  .addOption(pulsarClientOption())
  .addOption(invokerOption())
  .addOption(lambdaEndpointOption())
  .addOption(lambdaRetryWindowOption())
  .option(
    '--url <url>',
    'the HTTP endpoint of a running `toolbridge start` to call through (env TOOLBRIDGE_URL); default: the one on this machine at 127.0.0.1:8080 when it serves the tool and neither --broker nor --invoker is given',
  )
  .action(async (toolName: string, flags: SettingFlags & { arg: string[]; args?: string; user?: string; stream?: boolean; timeout: string; url?: string }) => {
    const project = loadProject(program.opts().config)
    const spec = project.services.find((s) => s.tools.some((t) => t.name === toolName))
    const tool = spec?.tools.find((t) => t.name === toolName)
    if (!spec || !tool) {
      const known = project.services.flatMap((s) => s.tools.map((t) => t.name)).join(', ')
      throw new ToolbridgeError('config', `unknown tool "${toolName}" (tools: ${known})`)
    }
    const args = parseArguments(flags.arg, flags.args)
    const timeoutSeconds = Number(flags.timeout)
    if (!(timeoutSeconds > 0)) throw new ToolbridgeError('config', `--timeout: "${flags.timeout}" must be a positive number of seconds`)
    const call = { user: flags.user, config: tool.config, arguments: args }
    const options = { timeoutMs: timeoutSeconds * 1000, onChunk: flags.stream ? (chunk: string) => void process.stdout.write(chunk) : undefined }
    const printAnswer = (answer: string) => void process.stdout.write(flags.stream ? '\n' : answer + '\n')

    const settings = resolveSettings({ ...flags, port: 'off' })
    const route = resolveInvokeRoute(flags)
    if (route.via === 'gateway') {
      const token = settings.httpToken
      const served = await gatewayTools(route.url, token)
      if (served?.includes(toolName)) return printAnswer(await callThroughGateway(route.url, toolName, call, { ...options, token }))
      if (!route.fallBackToEmbedded) {
        throw new ToolbridgeError('config', `--url ${route.url}: ${served ? `does not serve "${toolName}"` : 'no toolbridge answers there (or TOOLBRIDGE_HTTP_TOKEN is not its token)'}`)
      }
    }
    // No broker and no running bridge to go through: serve the call from an embedded bridge in this process.
    const runtime = route.via === 'broker' ? undefined : await startRuntime(project, settings)
    const transport = runtime ? await runtime.connectClient() : await connectRemote(settings.broker!, settings.pulsar)
    const client = new RequestClient(transport, spec)
    try {
      await client.start()
      printAnswer(await client.call(call, options))
    } finally {
      await client.close()
      await (runtime ? runtime.stop() : transport.close())
    }
  })

program
  .command('descriptors')
  .description('print the tool-service and tool config objects for TrustGraph')
  .addOption(new Option('--queues <style>', 'spelling of generated queue names').choices(QUEUE_STYLES).default('logical'))
  .addOption(mcpUrlOption())
  .addOption(mcpTokenOption('auth-token for the `mcp` entries'))
  .action((flags: { queues: QueueStyle; mcpUrl?: string; mcpToken?: string }) => {
    const project = loadProject(program.opts().config)
    const mcp = mcpEndpoint(flags.mcpUrl, resolveSettings({ mcpToken: flags.mcpToken }).mcpToken)
    console.log(JSON.stringify(descriptors(project.services, flags.queues, mcp), null, 2))
  })

addTrustgraphCommands(program, [brokerOption, pulsarTokenOption, pulsarListenerOption, pulsarClientOption], [invokerOption, lambdaEndpointOption, lambdaRetryWindowOption])

program
  .command('check')
  .description("check that each tool service's function can be called, without calling it (Lambda: GetFunction)")
  .addOption(invokerOption())
  .addOption(lambdaEndpointOption())
  .action(async (flags: SettingFlags) => {
    const project = loadProject(program.opts().config)
    const results = await checkFunctions(project, resolveSettings({ ...flags, port: 'off' }))
    for (const r of results) console.log(`${r.ok ? 'ok ' : 'BAD'}  ${r.service}  ${r.target}: ${r.detail}`)
    const bad = results.filter((r) => !r.ok).length
    if (bad > 0) throw new ToolbridgeError('config', `${bad} of ${results.length} function${results.length > 1 ? 's' : ''} cannot be called`)
  })

addScaffoldCommands(program)

function parseArguments(pairs: string[], json: string | undefined): Record<string, unknown> {
  let args: Record<string, unknown> = {}
  if (json !== undefined) {
    let parsed: unknown
    try {
      parsed = JSON.parse(json)
    } catch {
      throw new ToolbridgeError('config', '--args: not valid JSON')
    }
    if (!isRecord(parsed)) throw new ToolbridgeError('config', '--args: must be a JSON object')
    args = parsed
  }
  for (const pair of pairs) {
    const eq = pair.indexOf('=')
    if (eq <= 0) throw new ToolbridgeError('config', `--arg "${pair}": expected key=value`)
    args[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  return args
}

async function connectRemote(broker: string, pulsar: PulsarSettings) {
  const transport = createTransport(broker, undefined, { logger: createLogger('warn'), pulsar })
  await transport.connect()
  return transport
}

try {
  await program.parseAsync()
} catch (err) {
  // exitCode rather than exit(): let stdout drain when piped.
  if (err instanceof CommanderError) {
    // Commander has printed its own one-line message (or the help).
    process.exitCode = err.exitCode === 0 ? 0 : 2
  } else if (err instanceof ToolCallError) {
    console.error(`error: ${err.type}: ${err.message}`)
    process.exitCode = 1
  } else {
    console.error(`toolbridge: ${(err as Error).message}`)
    process.exitCode = 1
  }
}
