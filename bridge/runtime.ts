/**
 * Puts the parts together: transport, invoker, bridge and (optionally) the
 * HTTP gateway, from a project and its settings.
 */
import { messageOf } from '../shared/errors.ts'
import type { Project } from './project/project.ts'
import type { ToolServiceSpec } from './project/tool-services.ts'
import type { ConsoleFeed } from './http/console/console-feed.ts'
import { checkInFlightCap, type Settings } from './project/settings.ts'
import type { Metrics } from './support/metrics.ts'
import { createPathScrubber } from './support/host-paths.ts'
import { createBridge, type Bridge } from './core/bridge.ts'
import { startConfigService, type ConfigService } from './trustgraph/config-service.ts'
import { checkExposure } from './http/exposure.ts'
import type { Gateway } from './http/gateway.ts'
import { LocationInvoker } from './invokers/invoker-for-location.ts'
import type { Sources } from './invokers/invoker.ts'
import { silentLogger, type Logger } from './support/logger.ts'
import { startIdleCollection } from './support/idle-collection.ts'
import { createTransport } from './transports/create-transport.ts'
import { createAnsweredStores } from './stores/create-answered-stores.ts'
import { MemoryBroker } from './transports/memory/memory-transport.ts'
import type { Transport } from './transports/transport.ts'
import { startTracing } from './tracing/start-tracing.ts'

/** After the bridge has drained, how long HTTP callers wait for answers still on their way through the broker. */
const ANSWER_GRACE_MS = 500

export interface Runtime {
  bridge: Bridge
  metrics: Metrics
  transport: Transport
  gateway: Gateway | undefined
  /** On the embedded broker, TrustGraph's configuration service in memory (bridge/trustgraph/config-service.ts). */
  configService: ConfigService | undefined
  /** Makes another connection to the same broker, for clients. */
  connectClient(): Promise<Transport>
  /**
   * Loads a function's changed code while serving (worker threads; `toolbridge dev`): resolves with
   * why the new code cannot load, the old code serving on; requests in flight finish on the old code.
   * `sources`: the texts of its files, which every worker of the new code loads instead of the disk's.
   */
  reload(spec: ToolServiceSpec, sources?: Sources): Promise<string | undefined>
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
    logger.error(
      { err: messageOf(err), uncaught: count },
      "uncaught error outside any request (an in-process function's timer or callback?); the bridge keeps serving",
    )
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
  options: {
    logger?: Logger
    memoryBroker?: MemoryBroker
    /** With a gateway, serve the web console showing this feed (which may outlive this runtime). */
    console?: ConsoleFeed
    /** Where the OTEL_* variables are read (bridge/tracing/tracing-settings.ts); default process.env. */
    env?: Readonly<Record<string, string | undefined>>
  } = {},
): Promise<Runtime> {
  const logger = options.logger ?? silentLogger
  const memoryBroker = options.memoryBroker ?? new MemoryBroker()
  checkInFlightCap(project.services, settings.limits)
  // Before anything starts: a refused gateway must not leave a bridge running.
  if (settings.port !== undefined) await checkExposure(settings.host, settings, settings.gateway.allowUnauthenticated)
  // prom-client and the gateway are imported here rather than with this module: commands that only read serverless.yml never load them.
  const { createMetrics } = await import('./support/metrics.ts')
  const metrics = createMetrics()
  const tracing = await startTracing(options.env ?? process.env, {
    handlerInvoker: settings.invoker,
    onDropped: (spans) => metrics.spansDropped(spans),
    logger,
  })
  const transport = await createTransport(settings.broker, memoryBroker, {
    logger,
    pulsar: settings.pulsar,
    onReconnect: () => metrics.transportReconnected(transport.kind),
  })
  const invoker = new LocationInvoker({ settings, baseDir: project.baseDir, logger })
  const answeredStores = await createAnsweredStores(settings.delivery.answeredStore, logger)
  const consoleFeed = settings.port === undefined ? undefined : options.console
  const bridge = createBridge({
    transport,
    invoker,
    services: project.services,
    logger,
    drainTimeoutMs: settings.drainTimeoutMs,
    maxRequestBytes: settings.limits.maxRequestBytes,
    metrics,
    // The console's log, charts and the timing of its own calls.
    onAnswered: consoleFeed?.answered,
    scrubErrorMessage: settings.debug ? undefined : createPathScrubber(project.baseDir),
    delivery: settings.delivery,
    answeredStores,
    tracing,
  })
  const clientTransports: Transport[] = []
  const connectClient = async () => {
    const client = await createTransport(settings.broker, memoryBroker, { logger, pulsar: settings.pulsar })
    clientTransports.push(client)
    await client.connect()
    return client
  }
  let unguard: (() => void) | undefined
  let stopIdleCollection: (() => void) | undefined
  let gateway: Gateway | undefined
  let configService: ConfigService | undefined
  let bridgeStarted = false
  /** Stops what has started, in the order that lets answers in flight reach their HTTP callers. */
  const stopParts = async () => {
    stopIdleCollection?.()
    gateway?.drain() // new HTTP calls get 503 from here; those in flight wait for the bridge's drain
    if (bridgeStarted) await bridge.stop()
    // What the bridge answered is on its way; what it handed back is another replica's now.
    await gateway?.close({ abandonAfterMs: ANSWER_GRACE_MS })
    await configService?.stop()
    await Promise.all(clientTransports.map((t) => t.close()))
    await answeredStores.close()
    await tracing?.shutdown()
    unguard?.()
  }
  try {
    // The HTTP port first: when it is taken, the bridge has not taken a single request yet.
    if (settings.port !== undefined) {
      const { startGateway } = await import('./http/gateway.ts')
      gateway = await startGateway({
        services: project.services,
        transport: await connectClient(),
        host: settings.host,
        port: settings.port,
        mcpToken: settings.mcpToken,
        httpToken: settings.httpToken,
        mcpOAuth: settings.mcpOAuth,
        ...settings.gateway,
        metrics,
        logger,
        ready: () => bridge.ready,
        console: consoleFeed,
      })
    }
    unguard = settings.invoker === 'in-process' ? guardAgainstLateFunctionErrors(logger) : undefined
    bridgeStarted = true
    await bridge.start()
    if (settings.releaseMemoryAfterMs > 0)
      stopIdleCollection = startIdleCollection({
        periodMs: settings.releaseMemoryAfterMs,
        taken: () => bridge.requestsTaken,
        logger,
      })
    // On a real broker TrustGraph runs its own; two would compete for the same requests.
    if (settings.broker === undefined)
      configService = await startConfigService({ transport: await connectClient(), logger })
  } catch (err) {
    // A part that failed to start must not leave the others consuming, listening or holding the process open.
    await stopParts().catch((stopError: unknown) =>
      logger.warn({ err: messageOf(stopError) }, 'error while stopping after a failed start'),
    )
    throw err
  }
  return {
    bridge,
    metrics,
    transport,
    gateway,
    configService,
    connectClient,
    reload: (spec, sources) => invoker.reload(spec, sources),
    stop: stopParts,
  }
}
