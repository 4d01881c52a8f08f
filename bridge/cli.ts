#!/usr/bin/env node
/**
 * toolbridge: serve the tool services of serverless.yml, call them, and
 * print their TrustGraph descriptors.
 */
import { Command, CommanderError, Option } from 'commander'
import { descriptors } from '../shared/descriptors.ts'
import { isRecord, ToolbridgeError } from '../shared/errors.ts'
import { QUEUE_STYLES, type QueueStyle } from '../shared/queues.ts'
import { RequestClient, ToolCallError } from './client.ts'
import { EMBEDDED_DEFAULT_PORT, INVOKERS, loadProject, resolveSettings, type SettingFlags } from './config.ts'
import { createLogger, LOG_LEVELS } from './logger.ts'
import { startRuntime } from './runtime.ts'
import { createTransport } from './transports/index.ts'
import { redact } from './transports/redact.ts'

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
const lambdaRetryWindowOption = () =>
  new Option(
    '--lambda-retry-window <seconds>',
    'with --invoker lambda: how long throttled or failing calls are retried before answering with an error (env TOOLBRIDGE_LAMBDA_RETRY_WINDOW; default 60)',
  )

program
  .command('start')
  .description('serve every tool service in serverless.yml')
  .addOption(brokerOption())
  .addOption(invokerOption())
  .addOption(lambdaEndpointOption())
  .addOption(lambdaRetryWindowOption())
  .option('-p, --port <port>', `HTTP port for /tools, or "off" (env TOOLBRIDGE_PORT); default: ${EMBEDDED_DEFAULT_PORT} on the embedded broker, off otherwise`)
  .option('--host <host>', 'HTTP listen address (env TOOLBRIDGE_HOST)', undefined)
  .option('--drain-timeout <seconds>', 'on SIGINT/SIGTERM, how long to finish requests in flight')
  .addOption(new Option('--log-level <level>', 'log level (env TOOLBRIDGE_LOG_LEVEL)').choices(LOG_LEVELS))
  .action(async (flags: SettingFlags) => {
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
  .addOption(invokerOption())
  .addOption(lambdaEndpointOption())
  .addOption(lambdaRetryWindowOption())
  .action(async (toolName: string, flags: SettingFlags & { arg: string[]; args?: string; user?: string; stream?: boolean; timeout: string }) => {
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
    const settings = resolveSettings({ ...flags, port: 'off' })
    // Without a broker, serve the call from an embedded bridge in this process.
    const runtime = settings.broker === undefined ? await startRuntime(project, settings) : undefined
    const transport = runtime ? await runtime.connectClient() : await connectRemote(settings.broker!)
    const client = new RequestClient(transport, spec)
    try {
      await client.start()
      const answer = await client.call(
        { user: flags.user, config: tool.config, arguments: args },
        { timeoutMs: timeoutSeconds * 1000, onChunk: flags.stream ? (chunk) => process.stdout.write(chunk) : undefined },
      )
      process.stdout.write(flags.stream ? '\n' : answer + '\n')
    } finally {
      await client.close()
      await (runtime ? runtime.stop() : transport.close())
    }
  })

program
  .command('descriptors')
  .description('print the tool-service and tool config objects for TrustGraph')
  .addOption(new Option('--queues <style>', 'spelling of generated queue names').choices(QUEUE_STYLES).default('logical'))
  .action((flags: { queues: QueueStyle }) => {
    const project = loadProject(program.opts().config)
    console.log(JSON.stringify(descriptors(project.services, flags.queues), null, 2))
  })

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

async function connectRemote(broker: string) {
  const transport = createTransport(broker, undefined, { logger: createLogger('warn') })
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
