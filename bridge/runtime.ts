/**
 * Puts the parts together: transport, invoker, bridge and (optionally) the
 * HTTP gateway, from a project and its settings.
 */
import { checkInFlightCap, type Project, type Settings } from './project/settings.ts'
import { createMetrics, type Metrics } from './support/metrics.ts'
import { createPathScrubber } from './support/host-paths.ts'
import { createBridge, type Bridge } from './core/bridge.ts'
import { startConfigService, type ConfigService } from './trustgraph/config-service.ts'
import { checkExposure } from './http/exposure.ts'
import { startGateway, type Gateway } from './http/gateway.ts'
import { ExternalLambdaInvoker } from './invokers/external-lambda.ts'
import { HttpInvoker } from './invokers/http.ts'
import { InProcessInvoker } from './invokers/in-process.ts'
import type { Invoker } from './invokers/invoker.ts'
import { LambdaInvoker } from './invokers/lambda.ts'
import { WorkerThreadInvoker } from './invokers/local.ts'
import { RoutingInvoker } from './invokers/router.ts'
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

/**
 * The bridge's invoker for a project: HTTP functions (`url:`) and someone
 * else's Lambda functions (`function:`) each go to their own invoker, the
 * functions of serverless.yml to the one `settings.invoker` names.
 */
export function createProjectInvoker(project: Project, settings: Settings, logger: Logger = silentLogger): Invoker {
  const own = createInvoker(settings, project.baseDir, logger)
  const { services } = project
  const http = services.some((s) => s.http) ? new HttpInvoker(services, { env: settings.env, logger }) : undefined
  const external = services.some((s) => s.external) ? new ExternalLambdaInvoker(services, settings.lambda, logger) : undefined
  if (!http && !external) return own
  const routes = new Map<string, Invoker>()
  for (const spec of services) {
    if (spec.http) routes.set(spec.functionName, http!)
    else if (spec.external) routes.set(spec.functionName, external!)
  }
  return new RoutingInvoker(routes, own)
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
  const metrics = createMetrics()
  const transport = createTransport(settings.broker, memoryBroker, {
    logger,
    pulsar: settings.pulsar,
    onReconnect: () => metrics.transportReconnected(transport.kind),
  })
  const bridge = createBridge({
    transport,
    invoker: createProjectInvoker(project, settings, logger),
    services: project.services,
    logger,
    drainTimeoutMs: settings.drainTimeoutMs,
    maxRequestBytes: settings.limits.maxRequestBytes,
    metrics,
    scrubErrorMessage: settings.debug ? undefined : createPathScrubber(project.baseDir),
  })
  await bridge.start()
  const clientTransports: Transport[] = []
  const connectClient = async () => {
    const client = createTransport(settings.broker, memoryBroker, { logger, pulsar: settings.pulsar })
    await client.connect()
    clientTransports.push(client)
    return client
  }
  // On a real broker TrustGraph runs its own; two would compete for the same requests.
  const configService = settings.broker === undefined ? await startConfigService({ transport: await connectClient(), logger }) : undefined
  let gateway: Gateway | undefined
  if (settings.port !== undefined) {
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
    },
  }
}
