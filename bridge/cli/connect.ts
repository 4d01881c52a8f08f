/**
 * How a command that calls tools or TrustGraph reaches a broker: the one
 * place the command line connects to a remote broker.
 */
import type { Project } from '../project/project.ts'
import type { PulsarSettings, Settings } from '../project/settings.ts'
import { createLogger } from '../support/logger.ts'
import { createTransport } from '../transports/create-transport.ts'
import type { Transport } from '../transports/transport.ts'

/** A connection to a broker elsewhere; it logs warnings only, the command's output being its own. */
export async function connectBroker(broker: string, pulsar: PulsarSettings): Promise<Transport> {
  const transport = await createTransport(broker, undefined, { logger: createLogger('warn'), pulsar })
  await transport.connect()
  return transport
}

/** A transport to call the tools over, and how to let go of it. */
export interface ToolConnection {
  transport: Transport
  close(): Promise<void>
}

/**
 * Tools are reached through the broker of `settings`; without one, through a
 * bridge started in this process on the embedded broker for as long as the
 * command runs.
 */
export async function connectToTools(project: Project, settings: Settings): Promise<ToolConnection> {
  if (settings.broker !== undefined) {
    const transport = await connectBroker(settings.broker, settings.pulsar)
    return { transport, close: () => transport.close() }
  }
  const { startRuntime } = await import('../runtime.ts')
  const runtime = await startRuntime(project, settings)
  return { transport: await runtime.connectClient(), close: () => runtime.stop() }
}
