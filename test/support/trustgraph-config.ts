/**
 * TrustGraph's configuration side for interop tests, on RabbitMQ or Pulsar: its own
 * config service (test/interop/tg_config_service.py) and its own config
 * client and agent loader (test/interop/tg_config.py), from the virtual
 * environment of scripts/trustgraph-venv.sh.
 */
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PULSAR_ADMIN, PULSAR_URL } from './pulsar.ts'
import { interopScriptLines, startInteropProcess, TRUSTGRAPH_VENV } from './trustgraph.ts'

const PYTHON = join(TRUSTGRAPH_VENV, 'bin/python')
const INTEROP = fileURLToPath(new URL('../interop/', import.meta.url))

/** The local brokers of test/support/rabbitmq.ts and test/support/pulsar.ts, as TrustGraph's flags name them. */
export type TgBackend = 'rabbitmq' | 'pulsar'
const processorFlags = (backend: TgBackend) =>
  backend === 'rabbitmq'
    ? ['--pubsub-backend', 'rabbitmq', '--rabbitmq-host', '127.0.0.1']
    : ['--pubsub-backend', 'pulsar', '--pulsar-host', PULSAR_URL, '--pulsar-admin-url', PULSAR_ADMIN]
const clientFlags = (backend: TgBackend) =>
  backend === 'rabbitmq'
    ? ['--backend', 'rabbitmq', '--rabbitmq-host', '127.0.0.1']
    : ['--backend', 'pulsar', '--pulsar-host', PULSAR_URL]

/** Starts TrustGraph's config service; resolves once it consumes request:tg:config. */
export function startTrustgraphConfigService(backend: TgBackend = 'rabbitmq'): Promise<ChildProcess> {
  return startInteropProcess(
    "TrustGraph's config service",
    [PYTHON, join(INTEROP, 'tg_config_service.py'), ...processorFlags(backend), '--no-metrics', '--no-loki-enabled'],
    (log) => log.includes('Added consumer: request:tg:config'),
  )
}

/** Stops a child and waits until it is gone, so the next service owns the queue alone. */
export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

export type TgConfigCommand =
  | { op: 'put'; workspace: string; values: [string, string, string][] }
  | { op: 'get'; workspace: string; type: string; key: string }
  | { op: 'list'; workspace: string; type: string }
  | { op: 'delete'; workspace: string; keys: [string, string][] }
  | { op: 'request'; request: Record<string, unknown> }
  | { op: 'agent-tools' }

export interface AgentTool {
  description: string
  arguments: { name: string; type: string; description: string }[]
  /** ToolServiceImpl, McpToolImpl, ... */
  implementation: string
  settings: Record<string, unknown>
}

/** Runs the commands in order through TrustGraph's clients; one result object per command. */
export function trustgraphConfig(
  commands: TgConfigCommand[],
  backend: TgBackend = 'rabbitmq',
): Promise<Record<string, unknown>[]> {
  return interopScriptLines('tg_config.py', clientFlags(backend), commands)
}

/** What TrustGraph's ReAct agent loads from the configuration service: workspace -> tool name -> tool. */
export async function agentTools(
  backend: TgBackend = 'rabbitmq',
): Promise<{ workspaces: Record<string, Record<string, AgentTool>>; errors: string[] }> {
  const [result] = await trustgraphConfig([{ op: 'agent-tools' }], backend)
  if (result!.error) throw new Error(String(result!.error))
  return result as { workspaces: Record<string, Record<string, AgentTool>>; errors: string[] }
}
