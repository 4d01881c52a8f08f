/**
 * Three replicas on Pulsar, one killed mid-call: test/support/replica-contract.ts. The queues are
 * persistent topics (`flow:`): a non-persistent one drops what a dead consumer held. Never stops the broker.
 */
import { describeOnBroker, PULSAR } from '../support/broker-setup.ts'
import { describeReplicas } from '../support/replica-contract.ts'

describeOnBroker(PULSAR, () => {
  describeReplicas('Pulsar', { broker: PULSAR.url, limitMs: 180_000, drop: PULSAR.drop })
})
