/**
 * A function of a fixture project (test/fixtures/faults, test/fixtures/hardening)
 * as an invoker is handed it, named by its file under functions/. The
 * worker-thread tests start an invoker on the fixture's folder and call these,
 * each with the concurrency its test needs.
 */
import type { FunctionTarget } from '../../bridge/invokers/invoker.ts'
import type { HandlerLocation } from '../../bridge/project/tool-services.ts'

export type FixtureFunction = FunctionTarget<HandlerLocation>

/** Far above how long any call that should be answered runs: a fail-safe, not a measure. */
export const FAIL_SAFE_MS = 30_000

/** `functions/<name>.ts`'s handler, one answer per call, the fail-safe for a timeout; `overrides` as the test needs. */
export function fixtureFunction(
  name: string,
  concurrency: number,
  overrides: Partial<FixtureFunction> = {},
): FixtureFunction {
  return {
    functionName: name,
    location: { kind: 'handler', handler: `functions/${name}.handler`, lambdaName: name },
    response: 'single',
    timeoutMs: FAIL_SAFE_MS,
    concurrency,
    ...overrides,
  }
}
