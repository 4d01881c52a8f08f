/**
 * Three replicas on Pulsar, one killed mid-call: test/support/replica-contract.ts. The queues are
 * persistent topics (`flow:`): a non-persistent one drops what a dead consumer held. Never stops the broker.
 */
import { beforeAll, describe } from 'vitest'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { PULSAR_ADMIN, PULSAR_URL, pulsarRunnable, startPulsar } from '../support/pulsar.ts'
import { describeReplicas } from '../support/replica-contract.ts'

/** Deletes the run's persistent topics (their subscriptions with them). */
async function drop(run: string): Promise<void> {
  const response = await fetch(`${PULSAR_ADMIN}/admin/v2/persistent/tg/flow`)
  const topics = response.ok ? ((await response.json()) as string[]) : []
  for (const topic of topics.filter((t) => t.includes(run))) {
    await fetch(`${PULSAR_ADMIN}/admin/v2/${topic.replace('://', '/')}?force=true`, { method: 'DELETE' })
  }
}

describe.skipIf(!pulsarRunnable())('Pulsar', () => {
  beforeAll(async () => {
    await startPulsar() // the running one, or one started now (left running)
  }, 300_000)
  describeReplicas('Pulsar', {
    broker: PULSAR_URL,
    transport: () => createTransport(PULSAR_URL),
    queues: (run) => ({ request: `flow:tg:${run}-request`, response: `flow:tg:${run}-response` }),
    requests: 2000,
    limitMs: 180_000,
    drop,
  })
})
