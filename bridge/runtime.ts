/**
 * Puts the parts together: transport, invoker, bridge and (optionally) the
 * HTTP gateway, from a project and its settings.
 */
import type { Project, Settings } from './config.ts'
import { createBridge, type Bridge } from './bridge.ts'
import { startGateway, type Gateway } from './gateway.ts'
import { InProcessInvoker } from './invokers/in-process.ts'
import type { Invoker } from './invokers/invoker.ts'
import { LambdaInvoker } from './invokers/lambda.ts'
import { WorkerThreadInvoker } from './invokers/local.ts'
import { silentLogger, type Logger } from './logger.ts'
import { createTransport } from './transports/index.ts'
import { MemoryBroker } from './transports/memory.ts'
import type { Transport } from './transports/transport.ts'

export interface Runtime {
  bridge: Bridge
  transport: Transport
  gateway: Gateway | undefined
  /** Makes another connection to the same broker, for clients. */
  connectClient(): Promise<Transport>
  stop(): Promise<void>
}

export function createInvoker(settings: Pick<Settings, 'invoker' | 'lambda'>, baseDir: string, logger: Logger = silentLogger): Invoker {
  switch (settings.invoker) {
    case 'in-process':
      return new InProcessInvoker(baseDir)
    case 'local':
      return new WorkerThreadInvoker(baseDir)
    case 'lambda':
      return new LambdaInvoker({ ...settings.lambda, logger })
  }
}

export async function startRuntime(
  project: Project,
  settings: Settings,
  options: { logger?: Logger; memoryBroker?: MemoryBroker } = {},
): Promise<Runtime> {
  const logger = options.logger ?? silentLogger
  const memoryBroker = options.memoryBroker ?? new MemoryBroker()
  const transport = createTransport(settings.broker, memoryBroker, { logger })
  const bridge = createBridge({
    transport,
    invoker: createInvoker(settings, project.baseDir, logger),
    services: project.services,
    logger,
    drainTimeoutMs: settings.drainTimeoutMs,
  })
  await bridge.start()
  const clientTransports: Transport[] = []
  const connectClient = async () => {
    const client = createTransport(settings.broker, memoryBroker, { logger })
    await client.connect()
    clientTransports.push(client)
    return client
  }
  let gateway: Gateway | undefined
  if (settings.port !== undefined) {
    gateway = await startGateway({ services: project.services, transport: await connectClient(), host: settings.host, port: settings.port })
  }
  return {
    bridge,
    transport,
    gateway,
    connectClient,
    async stop() {
      await bridge.stop() // answers in flight still reach HTTP callers through the gateway
      await gateway?.close()
      await Promise.all(clientTransports.map((t) => t.close()))
    },
  }
}
