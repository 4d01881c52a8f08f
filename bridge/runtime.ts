/**
 * Puts the parts together: transport, invoker, bridge and (optionally) the
 * HTTP gateway, from a project and its settings.
 */
import { messageOf } from '../shared/errors.ts'
import type { Project } from './project/project.ts'
import { checkInFlightCap, type Settings } from './project/settings.ts'
import type { Metrics } from './support/metrics.ts'
import { createPathScrubber } from './support/host-paths.ts'
import { createBridge, type Bridge } from './core/bridge.ts'
import { startConfigService, type ConfigService } from './trustgraph/config-service.ts'
import { checkExposure } from './http/exposure.ts'
import type { Gateway } from './http/gateway.ts'
import { LocationInvoker } from './invokers/invoker-for-location.ts'
import { silentLogger, type Logger } from './support/logger.ts'
import { createTransport } from './transports/create-transport.ts'
import { MemoryBroker } from './transports/memory/memory-transport.ts'
import type { Transport } from './transports/transport.ts'

export interface Runtime {
  bridge: Bridge
  metrics: Metrics
  transport: Transport
  gateway: Gateway | undefined
  /** On the embedded broker, TrustGraph's configuration service in memory (bridge/trustgraph/config-service.ts). */
  configService: ConfigService | undefined
  /** Makes another connection to the same broker, for clients. */
  connectClient(): Promise<Transport>
  stop(): Promise<void>
}

/**
 * In-process functions share the bridge's process: an exception their timers
 * or callbacks throw after the handler returned (or a promise they leave
 * rejected) is the process's, and by default would end it. While such
 * functions run, it is logged with a running count and the bridge keeps
 * serving. Returns the way to remove the guard.
 */
function guardAgainstLateFunctionErrors(logger: Logger): () => void {
  let count = 0
  const onError = (err: unknown) => {
    count++
    logger.error({ err: messageOf(err), uncaught: count }, 'uncaught error outside any request (an in-process function\'s timer or callback?); the bridge keeps serving')
  }
  process.on('uncaughtException', onError)
  process.on('unhandledRejection', onError)
  return () => {
    process.off('uncaughtException', onError)
    process.off('unhandledRejection', onError)
  }
}

export async function startRuntime(
  project: Project,
  settings: Settings,
  options: { logger?: Logger; memoryBroker?: MemoryBroker } = {},
): Promise<Runtime> {
  const logger = options.logger ?? silentLogger
  const memoryBroker = options.memoryBroker ?? new MemoryBroker()
  checkInFlightCap(project.services, settings.limits)
  // Before anything starts: a refused gateway must not leave a bridge running.
  if (settings.port !== undefined) await checkExposure(settings.host, settings, settings.gateway.allowUnauthenticated)
  // prom-client and the gateway are imported here rather than with this module: commands that only read serverless.yml never load them.
  const { createMetrics } = await import('./support/metrics.ts')
  const metrics = createMetrics()
  const transport = await createTransport(settings.broker, memoryBroker, {
    logger,
    pulsar: settings.pulsar,
    onReconnect: () => metrics.transportReconnected(transport.kind),
  })
  const bridge = createBridge({
    transport,
    invoker: new LocationInvoker({ settings, baseDir: project.baseDir, logger }),
    services: project.services,
    logger,
    drainTimeoutMs: settings.drainTimeoutMs,
    maxRequestBytes: settings.limits.maxRequestBytes,
    metrics,
    scrubErrorMessage: settings.debug ? undefined : createPathScrubber(project.baseDir),
  })
  const unguard = settings.invoker === 'in-process' ? guardAgainstLateFunctionErrors(logger) : undefined
  await bridge.start()
  const clientTransports: Transport[] = []
  const connectClient = async () => {
    const client = await createTransport(settings.broker, memoryBroker, { logger, pulsar: settings.pulsar })
    await client.connect()
    clientTransports.push(client)
    return client
  }
  // On a real broker TrustGraph runs its own; two would compete for the same requests.
  const configService = settings.broker === undefined ? await startConfigService({ transport: await connectClient(), logger }) : undefined
  let gateway: Gateway | undefined
  if (settings.port !== undefined) {
    const { startGateway } = await import('./http/gateway.ts')
    gateway = await startGateway({
      services: project.services,
      transport: await connectClient(),
      host: settings.host,
      port: settings.port,
      mcpToken: settings.mcpToken,
      httpToken: settings.httpToken,
      ...settings.gateway,
      metrics,
      logger,
      ready: () => bridge.ready,
    })
  }
  return {
    bridge,
    metrics,
    transport,
    gateway,
    configService,
    connectClient,
    async stop() {
      await bridge.stop() // answers in flight still reach HTTP callers through the gateway
      await gateway?.close()
      await configService?.stop()
      await Promise.all(clientTransports.map((t) => t.close()))
      unguard?.()
    },
  }
}
