/**
 * Whether an interop file's tests can run here: TrustGraph's packages, and the
 * broker the file runs them on. Each file skips in one line that says what is
 * missing, worded the same way in every file.
 */
import { TRUSTGRAPH_INSTALL, trustgraphInstalled } from './trustgraph.ts'

/** `broker.here`: whether the broker can run; `broker.install`: what installs it. */
export function interopReady(tests: string, broker: { here: boolean; install: string }): boolean {
  const ready = broker.here && trustgraphInstalled()
  if (!ready)
    console.log(
      `skipping ${tests}: needs ${broker.here ? '' : `${broker.install} and `}TrustGraph's packages (${TRUSTGRAPH_INSTALL})`,
    )
  return ready
}
