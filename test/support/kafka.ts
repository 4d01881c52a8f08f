/**
 * A Kafka for the integration tests: the project's scripts/kafka.sh (one
 * KRaft node on 127.0.0.1:9092 from Maven Central's jars). One already
 * running is reused (CI starts it with `scripts/kafka.sh start`); otherwise
 * the tests start it and stop it when they are done. Without java and Maven
 * (and no broker running) the tests skip, saying so in one line.
 */
import { Admin } from '@platformatic/kafka'
import { brokerScript, onPath, runningOrStarted, type ScriptBroker } from './broker-script.ts'

export const KAFKA_URL = 'kafka://127.0.0.1:9092'
export const KAFKA_INSTALL =
  'a JDK 17+ and Maven (apt-get install -y openjdk-17-jdk-headless maven), then scripts/kafka.sh start'

let announced = false

/** Whether scripts/kafka.sh can run a broker here; if not, says once how to get one. */
export function kafkaAvailable(): boolean {
  const available = onPath('java') && onPath('mvn')
  if (!available && !announced) {
    announced = true
    console.warn(`skipping the Kafka tests: java or mvn is missing (${KAFKA_INSTALL})`)
  }
  return available
}

/** Runs scripts/kafka.sh; rejects with its output when it fails. */
export const kafkaScript = brokerScript<'start' | 'stop' | 'restart' | 'status'>('kafka')

export interface KafkaBroker extends ScriptBroker {
  url: string
}

/** The broker the tests use: the running one, or one started now. */
export async function startKafka(): Promise<KafkaBroker> {
  return { url: KAFKA_URL, ...(await runningOrStarted(kafkaScript)) }
}

/** An admin client on the test broker; close it when done. */
export const kafkaAdmin = () => new Admin({ clientId: 'toolbridge-tests', bootstrapBrokers: ['127.0.0.1:9092'] })

/** Deletes topics and consumer groups left by earlier runs (what does not exist is skipped). */
export async function dropTopicsAndGroups(topics: string[], groups: string[]): Promise<void> {
  const admin = kafkaAdmin()
  try {
    const existing = new Set(await admin.listTopics())
    const doomed = topics.filter((t) => existing.has(t))
    if (doomed.length > 0) await admin.deleteTopics({ topics: doomed })
    const known = await admin.listGroups()
    for (const group of groups.filter((g) => known.has(g))) {
      // A group with live members (another bridge on this broker) cannot be deleted: leave it.
      await admin.deleteGroups({ groups: [group] }).catch(() => {})
    }
    // Deletion is asynchronous: wait until the topics are gone, so a re-creation gets the new settings.
    for (let i = 0; i < 100; i++) {
      const left = new Set(await admin.listTopics())
      if (!doomed.some((t) => left.has(t))) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  } finally {
    await admin.close()
  }
}

/** The group's committed offset for one partition; -1 when nothing is committed. */
export async function committedOffset(group: string, topic: string, partition = 0): Promise<bigint> {
  const admin = kafkaAdmin()
  try {
    const [result] = await admin.listConsumerGroupOffsets({
      groups: [{ groupId: group, topics: [{ name: topic, partitionIndexes: [partition] }] }],
    })
    const found = result?.topics.find((t) => t.name === topic)?.partitions.find((p) => p.partitionIndex === partition)
    return found ? BigInt(found.committedOffset) : -1n
  } finally {
    await admin.close()
  }
}

/** Which partitions of `topic` each member of `group` holds, by client host:member id. */
export async function groupAssignments(group: string): Promise<{ memberId: string; partitions: number[] }[]> {
  const admin = kafkaAdmin()
  try {
    const groups = await admin.describeGroups({ groups: [group] })
    const described = groups.get(group)
    return [...(described?.members.values() ?? [])].map((member) => ({
      memberId: member.id,
      partitions: [...(member.assignments?.values() ?? [])].flatMap((a) => a.partitions),
    }))
  } finally {
    await admin.close()
  }
}
