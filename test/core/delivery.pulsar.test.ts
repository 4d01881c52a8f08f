/** Delivery (maxAge, answered once, dead letters) on Pulsar: test/support/delivery-contract.ts. Never stops the broker. */
import { beforeAll, describe } from 'vitest'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { describeDelivery } from '../support/delivery-contract.ts'
import { PULSAR_ADMIN, PULSAR_URL, pulsarRunnable, startPulsar } from '../support/pulsar.ts'

/** Deletes the suite's persistent topics (their subscriptions with them). */
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
  describeDelivery('Pulsar', { transport: () => createTransport(PULSAR_URL), limitMs: 60_000, drop })
})
