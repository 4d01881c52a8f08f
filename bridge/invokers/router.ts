/**
 * One invoker for the bridge over several: each function goes to the
 * invoker that can reach it (an HTTP function, someone else's Lambda
 * function), the rest to the bridge's own (`--invoker`).
 */
import type { FunctionTarget, Invocation, Invoker, Outcome } from './invoker.ts'

export class RoutingInvoker implements Invoker {
  private readonly routes: Map<string, Invoker>
  private readonly fallback: Invoker

  /** `routes`: function key (under `functions:` or `custom.toolServices`) -> its invoker. */
  constructor(routes: Map<string, Invoker>, fallback: Invoker) {
    this.routes = routes
    this.fallback = fallback
  }

  private invokerFor(target: FunctionTarget): Invoker {
    return this.routes.get(target.functionName) ?? this.fallback
  }

  prepare(target: FunctionTarget): Promise<string | undefined> {
    return this.invokerFor(target).prepare(target)
  }

  invoke(invocation: Invocation): Promise<Outcome> {
    return this.invokerFor(invocation.target).invoke(invocation)
  }

  async close(): Promise<void> {
    await Promise.all([...new Set([...this.routes.values(), this.fallback])].map((invoker) => invoker.close()))
  }
}
