/**
 * A broker bench's load in a process of its own (startLoadClient in
 * load-client-process.ts starts it), so that the bench process's CPU time
 * is the service's alone, raw echo or bridge, and not also the client's.
 *
 * Given the broker, the queues, the request and the answer it expects (one
 * JSON argument), it checks one answer and says `ready`. On each `measure`
 * it runs the shared closed loop (a warm-up, then the measured loop) and
 * sends `mark` just before and just after each loop, when the parent reads
 * its own clocks; then `measured` with the loop's figures and this
 * process's own CPU over the measured loop.
 */
import { createTransport } from '../bridge/transports/create-transport.ts'
import { RequestClient } from '../bridge/trustgraph/request-client.ts'
import { measure } from './closed-loop.ts'
import { processCpuUs } from './cpu-and-memory.ts'
import type { FromLoadClient, LoadClientSetup, ToLoadClient } from './load-client-process.ts'

const setup = JSON.parse(process.argv[2]!) as LoadClientSetup
const send = (message: FromLoadClient) => process.send!(message)

const transport = await createTransport(setup.broker, undefined, {
  pulsar: setup.nativePulsar ? { client: 'native' } : undefined,
})
await transport.connect()
const client = new RequestClient(transport, { requestQueue: setup.requestQueue, responseQueue: setup.responseQueue })
await client.start()

const answer = await client.call(setup.request, { timeoutMs: setup.startupTimeoutMs })
if (answer !== setup.expected) throw new Error(`unexpected answer ${JSON.stringify(answer)}`)
// Bring every execution environment of the service up (worker threads start lazily) before timing anything.
for (let round = 0; round < 3; round++)
  await Promise.all(
    Array.from({ length: setup.startupInFlight }, () =>
      client.call(setup.request, { timeoutMs: setup.startupTimeoutMs }),
    ),
  )
send({ type: 'ready' })

process.on('message', async (message: ToLoadClient) => {
  if (message.type === 'stop') {
    await client.close()
    await transport.close()
    process.disconnect()
    return
  }
  const call = () => client.call(setup.request, { timeoutMs: setup.callTimeoutMs })
  const { used, ...stats } = await measure(call, message.inFlight, {
    seconds: message.seconds,
    warmupSeconds: message.warmupSeconds,
    probes: {
      mark: () => {
        send({ type: 'mark' })
        return 0
      },
      client: processCpuUs,
    },
  })
  send({ type: 'measured', stats, clientCpuUs: used.client })
})
