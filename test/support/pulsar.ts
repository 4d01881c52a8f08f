/**
 * A real Pulsar for the integration tests and benches: the standalone broker
 * of scripts/pulsar.sh (jars from Maven Central, 127.0.0.1:6650, admin REST
 * on 8081, tenant `tg`). One already running is reused (CI starts it with
 * `scripts/pulsar.sh start`); otherwise the tests start it and stop it when
 * they are done. Without a JDK or Maven the tests skip, saying so in one line.
 */
import { brokerScript, onPath, runningOrStarted, type ScriptBroker } from './broker-script.ts'

const PORT = Number(process.env.PULSAR_PORT || 6650)
const WEB_PORT = Number(process.env.PULSAR_WEB_PORT || 8081)

export const PULSAR_URL = `pulsar://127.0.0.1:${PORT}`
export const PULSAR_ADMIN = `http://127.0.0.1:${WEB_PORT}`
export const PULSAR_INSTALL =
  'a JDK 17+ and Maven (apt-get install -y openjdk-17-jdk-headless maven), then scripts/pulsar.sh start'

let announced = false

/** Whether this machine can run the broker; if not, says once how to get there. */
export function pulsarRunnable(): boolean {
  const runnable = onPath('java') && onPath('mvn') && onPath('curl')
  if (!runnable && !announced) {
    announced = true
    console.warn(`skipping the Pulsar tests: needs ${PULSAR_INSTALL}`)
  }
  return runnable
}

/** Runs scripts/pulsar.sh; rejects with its output when it fails. */
export const pulsarScript = brokerScript<'start' | 'stop' | 'status'>('pulsar')

export interface PulsarBroker extends ScriptBroker {
  url: string
  admin: string
}

/** The broker the tests use: the running one, or one started now. */
export async function startPulsar(): Promise<PulsarBroker> {
  return { url: PULSAR_URL, admin: PULSAR_ADMIN, ...(await runningOrStarted(pulsarScript)) }
}

/** PUT /admin/v2/<persistence>/<tenant>/<ns>/<topic>/unload: the broker closes every producer and consumer of the topic. */
export async function unloadTopic(topic: string): Promise<void> {
  const path = topic.replace('://', '/')
  const response = await fetch(`${PULSAR_ADMIN}/admin/v2/${path}/unload`, { method: 'PUT' })
  if (!response.ok) throw new Error(`unload of ${topic}: HTTP ${response.status} ${await response.text()}`)
}
