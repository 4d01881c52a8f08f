/** Three replicas on Kafka, one killed mid-call: test/support/replica-contract.ts. Never stops the broker. */
import { describeOnBroker, KAFKA } from '../support/broker-setup.ts'
import { describeReplicas } from '../support/replica-contract.ts'

describeOnBroker(KAFKA, () => {
  // Three partitions, one for each replica: with one, only one replica of the group would read.
  describeReplicas('Kafka', { broker: `${KAFKA.url}?partitions=3`, limitMs: 180_000, drop: KAFKA.drop })
})
