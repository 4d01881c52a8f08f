/**
 * Where a function runs -> the invoker that calls it. The one place that maps
 * a location (and, for a function of serverless.yml, `--invoker`) to an
 * invoker. Each invoker's module is imported when a function first needs it,
 * as serverless-offline's HandlerRunner picks a runner: the AWS SDK is loaded
 * only when a function runs on Lambda, worker threads only when one runs in them.
 */
import type { Settings } from '../project/settings.ts'
import type { FunctionLocation, HandlerLocation, HttpLocation, LambdaLocation } from '../project/tool-services.ts'
import { silentLogger, type Logger } from '../support/logger.ts'
import type { FunctionTarget, Invocation, Invoker, Outcome, Sources } from './invoker.ts'

export interface LocationInvokerOptions {
  settings: Pick<Settings, 'invoker' | 'lambda' | 'env' | 'workers'> & {
    limits: Pick<Settings['limits'], 'maxStreamBytes'>
  }
  /** Directory of serverless.yml: handlers are relative to it. */
  baseDir: string
  logger?: Logger
}

/** A function of serverless.yml runs where `--invoker` says: here, in a worker thread or in process, or deployed on Lambda. */
async function handlerInvoker({
  settings,
  baseDir,
  logger,
}: Required<LocationInvokerOptions>): Promise<Invoker<HandlerLocation>> {
  switch (settings.invoker) {
    case 'worker-threads': {
      const { WorkerThreadInvoker } = await import('./worker-threads/worker-thread-invoker.ts')
      return new WorkerThreadInvoker(baseDir, {
        logger,
        maxStreamBytes: settings.limits.maxStreamBytes,
        sizing: settings.workers,
      })
    }
    case 'in-process': {
      const { InProcessInvoker } = await import('./in-process-invoker.ts')
      return new InProcessInvoker(baseDir, { maxStreamBytes: settings.limits.maxStreamBytes })
    }
    case 'lambda': {
      const { LambdaInvoker } = await import('./lambda/lambda-invoker.ts')
      return new LambdaInvoker({ ...settings.lambda, logger })
    }
  }
}

async function lambdaInvoker({ settings, logger }: Required<LocationInvokerOptions>): Promise<Invoker<LambdaLocation>> {
  const { ExternalLambdaInvoker } = await import('./lambda/external-lambda-invoker.ts')
  return new ExternalLambdaInvoker(settings.lambda, logger)
}

async function httpInvoker({ settings, logger }: Required<LocationInvokerOptions>): Promise<Invoker<HttpLocation>> {
  const { HttpInvoker } = await import('./http-function/http-function-invoker.ts')
  return new HttpInvoker({ env: settings.env, logger })
}

/** The bridge's invoker: each function goes to the invoker for its location, made on first use and shared by every function there. */
export class LocationInvoker implements Invoker {
  private readonly handlers: () => Promise<Invoker<HandlerLocation>>
  private readonly lambdas: () => Promise<Invoker<LambdaLocation>>
  private readonly http: () => Promise<Invoker<HttpLocation>>
  /** The invokers made so far, to close. */
  private readonly made: Promise<{ close(): Promise<void> }>[] = []

  constructor(options: LocationInvokerOptions) {
    const resolved = { ...options, logger: options.logger ?? silentLogger }
    this.handlers = this.once(() => handlerInvoker(resolved))
    this.lambdas = this.once(() => lambdaInvoker(resolved))
    this.http = this.once(() => httpInvoker(resolved))
  }

  prepare(target: FunctionTarget): Promise<string | undefined> {
    return this.at(target, (invoker, located) => invoker.prepare(located))
  }

  invoke(invocation: Invocation): Promise<Outcome> {
    return this.at(invocation.target, (invoker, target) => invoker.invoke({ ...invocation, target }))
  }

  /** Loads a function's changed code anew where its invoker can (worker threads); elsewhere there is nothing to do. */
  async reload(target: FunctionTarget, sources?: Sources): Promise<string | undefined> {
    if (target.location.kind !== 'handler') return undefined
    const invoker = await this.handlers()
    return invoker.reload?.(target as FunctionTarget<HandlerLocation>, sources)
  }

  async close(): Promise<void> {
    // An invoker whose module failed to load has nothing to close; the failure went to its caller.
    await Promise.all(
      this.made.map((made) =>
        made.then(
          (invoker) => invoker.close(),
          () => undefined,
        ),
      ),
    )
  }

  /** Hands `use` the invoker for the target's location, and the target typed for that invoker. */
  private async at<R>(
    target: FunctionTarget,
    use: <L extends FunctionLocation>(invoker: Invoker<L>, target: FunctionTarget<L>) => Promise<R>,
  ): Promise<R> {
    // The switch proves the kind; the target itself is the service's spec, and copying it to narrow its
    // type would cost every request, so it is passed as it is.
    switch (target.location.kind) {
      case 'handler':
        return use(await this.handlers(), target as FunctionTarget<HandlerLocation>)
      case 'lambda':
        return use(await this.lambdas(), target as FunctionTarget<LambdaLocation>)
      case 'http':
        return use(await this.http(), target as FunctionTarget<HttpLocation>)
    }
  }

  private once<L extends FunctionLocation>(make: () => Promise<Invoker<L>>): () => Promise<Invoker<L>> {
    let made: Promise<Invoker<L>> | undefined
    return () => {
      if (!made) {
        made = make()
        this.made.push(made)
      }
      return made
    }
  }
}
