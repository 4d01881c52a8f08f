/** Delivery (maxAge, answered once, dead letters) on Kafka: test/support/delivery-contract.ts. Never stops the broker. */
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { describeOnBroker, KAFKA } from '../support/broker-setup.ts'
import { describeDelivery } from '../support/delivery-contract.ts'

describeOnBroker(KAFKA, () => {
  describeDelivery('Kafka', {
    transport: () => createTransport(KAFKA.url),
    limitMs: 60_000,
    drop: KAFKA.drop,
    newGroupsStartAtEnd: true,
  })
})
