/**
 * Interop with TrustGraph itself, on Pulsar: TrustGraph's own
 * RequestResponseClient, through its own Pulsar backend (the native Python
 * pulsar-client), calls tools served by the bridge; and `toolbridge invoke`
 * calls TrustGraph's own joke service, run as shipped (its topics are
 * non-persistent://tg/request/joke and .../response/joke). Needs a JDK and
 * Maven (scripts/pulsar.sh) and the virtual environment of
 * scripts/trustgraph-venv.sh; .ci/run provides both.
 */
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PULSAR_INSTALL, pulsarRunnable, startPulsar } from '../support/pulsar.ts'
import { invokeJokeOn, startInteropProcess, TRUSTGRAPH_VENV } from '../support/trustgraph.ts'
import { interopReady } from '../support/interop-ready.ts'
import { brokerSuite, describeTrustgraphClient } from '../support/transport-contract.ts'

const ready = interopReady('TrustGraph interop tests on Pulsar', { here: pulsarRunnable(), install: PULSAR_INSTALL })

describe.skipIf(!ready)('TrustGraph interop on Pulsar', () => {
  const suite = brokerSuite(startPulsar)

  describeTrustgraphClient("TrustGraph's client calling the bridge", {
    settings: () => suite.settings,
    backend: () => ({ backend: 'pulsar', serviceUrl: suite.broker.url, adminUrl: suite.broker.admin }),
    concurrentCalls: 100,
  })

  describe("the bridge's client calling TrustGraph's joke service, as shipped", () => {
    let service: ChildProcess
    beforeAll(async () => {
      service = await startInteropProcess(
        'joke-service',
        [
          join(TRUSTGRAPH_VENV, 'bin/joke-service'),
          '--pubsub-backend',
          'pulsar',
          '--pulsar-host',
          suite.broker.url,
          '--pulsar-admin-url',
          suite.broker.admin,
          '--no-metrics',
          '--no-loki-enabled',
        ],
        (log) => /Added consumer|Subscribed|consumer/i.test(log) && log.includes('joke'),
      )
    })
    afterAll(() => {
      service?.kill('SIGKILL')
    })

    it('toolbridge invoke --broker pulsar:// prints its answer', async () => {
      const stdout = await invokeJokeOn(suite.broker.url)
      expect(stdout).toMatch(/^Here's a pun for you:\n\n\S.*\n$/)
    })
  })
})
