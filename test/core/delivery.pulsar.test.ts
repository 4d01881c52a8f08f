/** Delivery (maxAge, answered once, dead letters) on Pulsar: test/support/delivery-contract.ts. Never stops the broker. */
import { createTransport } from '../../bridge/transports/create-transport.ts'
import { describeOnBroker, PULSAR } from '../support/broker-setup.ts'
import { describeDelivery } from '../support/delivery-contract.ts'

describeOnBroker(PULSAR, () => {
  describeDelivery('Pulsar', { transport: () => createTransport(PULSAR.url), limitMs: 60_000, drop: PULSAR.drop })
})
