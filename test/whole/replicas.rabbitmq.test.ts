/** Three replicas on RabbitMQ, one killed mid-call: test/support/replica-contract.ts. Never stops the broker. */
import { describeOnBroker, RABBITMQ } from '../support/broker-setup.ts'
import { describeReplicas } from '../support/replica-contract.ts'

describeOnBroker(RABBITMQ, () => {
  describeReplicas('RabbitMQ', { broker: RABBITMQ.url, limitMs: 120_000, drop: RABBITMQ.drop })
})
