/**
 * The command line's options, each defined once, and the parsing of the
 * values settings.ts does not read. Commands take them one by one or by group.
 */
import { Option, type Command } from 'commander'
import { UsageError } from '../../shared/errors.ts'
import { QUEUE_STYLES } from '../../shared/queues.ts'
import { INVOKERS, PULSAR_CLIENTS } from '../project/settings.ts'
import type { McpEndpoint } from '../project/descriptors.ts'

const brokerOption = () =>
  new Option('-b, --broker <url>', 'broker URL (env TOOLBRIDGE_BROKER); default: the embedded broker')
// For pulsar:// brokers: token, advertised listener, and which client library.
const pulsarTokenOption = () =>
  new Option('--pulsar-token <token>', 'with a pulsar:// broker: token for its token authentication (env PULSAR_TOKEN)')
const pulsarListenerOption = () =>
  new Option(
    '--pulsar-listener <name>',
    "with a pulsar:// broker: the advertised listener to look topics up for (env TOOLBRIDGE_PULSAR_LISTENER), as TrustGraph's --pulsar-listener",
  )
const pulsarClientOption = () =>
  new Option(
    '--pulsar-client <kind>',
    'with a pulsar:// broker: the built-in TypeScript client, or the optional native pulsar-client addon (env TOOLBRIDGE_PULSAR_CLIENT; default builtin)',
  ).choices(PULSAR_CLIENTS)

export const invokerOption = () =>
  new Option(
    '--invoker <kind>',
    'where the functions of serverless.yml run: worker-threads, in-process, or lambda (their deployed copies) (env TOOLBRIDGE_INVOKER; default worker-threads)',
  ).choices(INVOKERS)
export const lambdaEndpointOption = () =>
  new Option(
    '--lambda-endpoint <url>',
    'with --invoker lambda: the Lambda API to call, e.g. http://localhost:3002 for serverless-offline (env TOOLBRIDGE_LAMBDA_ENDPOINT); default: AWS, with the standard credential chain',
  )
const lambdaRetryWindowOption = () =>
  new Option(
    '--lambda-retry-window <seconds>',
    'with --invoker lambda: how long throttled or failing calls are retried before answering with an error (env TOOLBRIDGE_LAMBDA_RETRY_WINDOW; default 60)',
  )

/** --broker and the options of particular brokers. */
export const addBrokerOptions = (command: Command): Command =>
  command
    .addOption(brokerOption())
    .addOption(pulsarTokenOption())
    .addOption(pulsarListenerOption())
    .addOption(pulsarClientOption())

/** Where functions run, for a command that serves the tools from a bridge of its own when no broker is given. */
export const addInvokerOptions = (command: Command): Command =>
  command.addOption(invokerOption()).addOption(lambdaEndpointOption()).addOption(lambdaRetryWindowOption())

export const workspaceOption = () =>
  new Option(
    '-w, --workspace <workspace>',
    'TrustGraph workspace to register in (env TOOLBRIDGE_WORKSPACE; default "default")',
  )
export const queuesOption = () =>
  new Option('--queues <style>', 'spelling of generated queue names').choices(QUEUE_STYLES).default('logical')
export const mcpUrlOption = () =>
  new Option(
    '--mcp-url <url>',
    "also TrustGraph `mcp` entries and `mcp-tool` tools reaching these tools at this MCP URL (a `toolbridge start`'s /mcp)",
  )
export const mcpTokenOption = (what: string) => new Option('--mcp-token <token>', `${what} (env TOOLBRIDGE_MCP_TOKEN)`)

/** --timeout in seconds, read by timeoutMs() when the command needs it. */
export const timeoutOption = (what: string, defaultSeconds: number) =>
  new Option('--timeout <seconds>', what).default(String(defaultSeconds))

export function timeoutMs(value: string): number {
  const seconds = Number(value)
  if (!(seconds > 0)) throw new UsageError('--timeout', `"${value}" must be a positive number of seconds`)
  return seconds * 1000
}

/** --mcp-url with the token for it, as the `mcp` entries name it; undefined without --mcp-url. */
export function mcpEndpoint(url: string | undefined, token: string | undefined): McpEndpoint | undefined {
  if (url === undefined) return undefined
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new UsageError('--mcp-url', `"${url}" is not a URL, e.g. http://toolbridge:8080/mcp`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new UsageError('--mcp-url', `"${url}" must be an http:// or https:// URL`)
  return token ? { url, authToken: token } : { url }
}
