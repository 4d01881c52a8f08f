/**
 * A tool service's spec as the target of an invoker for one kind of location,
 * for tests that call an invoker directly; a spec at another kind fails the test.
 */
import type { FunctionTarget } from '../../bridge/invokers/invoker.ts'
import type { FunctionLocation } from '../../bridge/project/tool-services.ts'

type LocationOf<K extends FunctionLocation['kind']> = Extract<FunctionLocation, { kind: K }>

const isAt = <K extends FunctionLocation['kind']>(location: FunctionLocation, kind: K): location is LocationOf<K> =>
  location.kind === kind

export function locatedAt<T extends FunctionTarget, K extends FunctionLocation['kind']>(
  spec: T,
  kind: K,
): T & FunctionTarget<LocationOf<K>> {
  const { location } = spec
  if (!isAt(location, kind)) throw new Error(`"${spec.functionName}" runs at a ${location.kind} location, not ${kind}`)
  return { ...spec, location }
}
