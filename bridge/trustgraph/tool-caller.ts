/**
 * Calls a tool by name through the broker, as an agent would: the path the
 * HTTP gateway and the MCP server share. A tool's config values are fixed
 * by its declaration; its arguments are checked against their declared
 * types first (the bridge's own check, shared/arguments.ts), so a bad value
 * gets the same error here as on the queue.
 */
import { checkArguments } from '../../shared/arguments.ts'
import type { ToolServiceSpec, ToolSpec } from '../project/tool-services.ts'
import { RequestClient, ToolCallError } from './request-client.ts'
import type { Transport } from '../transports/transport.ts'

export interface ToolEntry {
  spec: ToolServiceSpec
  tool: ToolSpec
}

export interface ToolCallOptions {
  /** Called with each chunk of a streaming service's answer. */
  onChunk?: (text: string) => void
  /** The caller is gone: its chunks are dropped from then on (see RequestClient). */
  signal?: AbortSignal
  /** The caller's W3C trace context, passed on in the request's properties. */
  traceContext?: Readonly<Record<string, string>> | undefined
  /** Told the request's `id` (its correlation id on the broker) when it is sent. */
  onId?: (id: string) => void
}

export interface ToolCaller {
  /** Every tool, by name, in serverless.yml's order. */
  readonly tools: ReadonlyMap<string, ToolEntry>
  /** Resolves with the whole answer; rejects with ToolCallError (the service's error), a timeout or a broker failure. */
  call(
    name: string,
    request: { user?: string; arguments: Record<string, unknown> },
    options?: ToolCallOptions,
  ): Promise<string>
  close(): Promise<void>
}

/** The bridge answers a timed-out function itself; this margin only covers a lost answer. */
const ANSWER_MARGIN_MS = 5_000

export function createToolCaller(services: ToolServiceSpec[], transport: Transport): ToolCaller {
  const tools = new Map<string, ToolEntry>()
  for (const spec of services) for (const tool of spec.tools) tools.set(tool.name, { spec, tool })
  const clients = new Map<string, Promise<RequestClient>>()

  const clientFor = (spec: ToolServiceSpec): Promise<RequestClient> => {
    let client = clients.get(spec.id)
    if (!client) {
      const created = new RequestClient(transport, spec)
      client = created.start().then(() => created)
      client.catch(() => clients.delete(spec.id))
      clients.set(spec.id, client)
    }
    return client
  }

  return {
    tools,
    async call(name, request, options = {}) {
      const entry = tools.get(name)
      if (!entry)
        throw new ToolCallError('bad-request', `unknown tool "${name}" (tools: ${[...tools.keys()].join(', ')})`)
      const checked = checkArguments(request.arguments, entry.tool.arguments)
      if (!checked.ok) throw new ToolCallError('invalid-arguments', checked.message)
      const client = await clientFor(entry.spec)
      return client.call(
        { user: request.user, config: entry.tool.config, arguments: checked.value },
        {
          timeoutMs: entry.spec.timeoutMs + ANSWER_MARGIN_MS,
          // Only a streaming service sends chunks; with a chunk handler the client waits for them all.
          onChunk: entry.spec.response === 'stream' ? (options.onChunk ?? (() => {})) : undefined,
          signal: options.signal,
          traceContext: options.traceContext,
          onId: options.onId,
        },
      )
    },
    async close() {
      await Promise.all(
        [...clients.values()].map((c) =>
          c.then(
            (client) => client.close(),
            () => undefined,
          ),
        ),
      )
    },
  }
}
