/**
 * The bridge on a real Kafka (test/support/kafka.ts starts one with
 * scripts/kafka.sh, or the tests skip in one line without java and Maven):
 * the transport contract (test/support/transport-contract.ts: the example
 * tools, bad requests, load, a broker restart mid-load, flow control), and
 * what is Kafka's own: the broker URL, offsets committed only past finished
 * requests, two replicas sharing three partitions, a replica killed with
 * requests in flight, the broker's own size limit, the bytes TrustGraph's
 * Kafka backend sends and expects, and TrustGraph's own Python client calling
 * the bridge. Waits are fail-safes, never assertions on time; the measured
 * recovery time is printed.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Consumer, MessagesStreamModes, Producer, stringDeserializer, stringSerializer } from '@platformatic/kafka'
import { beforeAll, describe, expect, it } from 'vitest'
import type { ToolServiceSpec } from '../../bridge/project/tool-services.ts'
import { ToolbridgeError } from '../../shared/errors.ts'
import { loadProject, type Project } from '../../bridge/project/project.ts'
import { resolveSettings } from '../../bridge/project/settings.ts'
import { KafkaTransport } from '../../bridge/transports/kafka/kafka-transport.ts'
import { PartitionProgress } from '../../bridge/transports/kafka/offsets.ts'
import { parseKafkaUrl } from '../../bridge/transports/kafka/url.ts'
import {
  committedOffset,
  dropTopicsAndGroups,
  groupAssignments,
  kafkaAdmin,
  kafkaAvailable,
  KAFKA_URL,
  kafkaScript,
  startKafka,
} from '../support/kafka.ts'
import { TRUSTGRAPH_INSTALL, trustgraphInstalled } from '../support/trustgraph.ts'
import { ResponseTap, waitFor } from '../support/response-tap.ts'
import { StartedBridge } from '../support/started-bridge.ts'
import {
  brokerSuite,
  describeTransport,
  describeTrustgraphClient,
  loadTwoReplicas,
  serviceById,
} from '../support/transport-contract.ts'

const EXAMPLES_YML = fileURLToPath(new URL('../../serverless.yml', import.meta.url))
const FIXTURE_YML = fileURLToPath(new URL('../fixtures/brokers/kafka.yml', import.meta.url))
/** Fail-safe for calls that should be answered: never an assertion on how long they take. */
const CALL_TIMEOUT_MS = 30_000

const available = kafkaAvailable()

/** The fixture project with the replica service's handler swapped, so answers name the replica. */
function asReplica(project: Project, exportName: string): Project {
  return {
    ...project,
    services: project.services.map((s) =>
      s.id === 'kafka-replica-service' && s.location.kind === 'handler'
        ? { ...s, location: { ...s.location, handler: `handlers.${exportName}` } }
        : s,
    ),
  }
}

describe('which Kafka offset may be committed (no broker needed)', () => {
  it('moves only past a run of finished records at the front, whatever order they finish in', () => {
    const progress = new PartitionProgress()
    const [a, b, c, d] = [10n, 11n, 13n, 14n].map((offset) => progress.track(offset, 0)!) // 12 is a gap (a compacted record)
    expect(progress.finish(c!)).toBeUndefined()
    expect(progress.finish(b!)).toBeUndefined() // 10 still running: nothing can be committed
    expect(progress.finish(a!)).toEqual({ offset: 14n, leaderEpoch: 0 }) // 10, 11 and 13 done: resume at 14
    expect(progress.pending).toBe(1)
    expect(progress.finish(d!)).toEqual({ offset: 15n, leaderEpoch: 0 })
    expect(progress.finish(d!)).toBeUndefined() // a second ack changes nothing
  })

  it('refuses an offset it has already handed out, so a re-fetched record is not worked on twice', () => {
    const progress = new PartitionProgress()
    expect(progress.track(5n, 1)).toBeDefined()
    expect(progress.track(5n, 1)).toBeUndefined()
    expect(progress.track(4n, 1)).toBeUndefined()
    expect(progress.track(6n, 1)).toBeDefined()
  })
})

describe('the kafka:// broker URL (no broker needed)', () => {
  it('takes a list of bootstrap servers, a default port and the partition count', () => {
    const parsed = parseKafkaUrl('kafka://a.example:9093,b.example,[::1]:9094?partitions=3')
    expect(parsed.brokers).toEqual([
      { host: 'a.example', port: 9093 },
      { host: 'b.example', port: 9092 },
      { host: '::1', port: 9094 },
    ])
    expect(parsed.partitions).toBe(3)
    expect(parsed.securityProtocol).toBe('PLAINTEXT')
    expect(parsed.sasl).toBeUndefined()
  })

  it('takes SASL credentials from the URL, SCRAM on request, and TLS for SASL_SSL', () => {
    const parsed = parseKafkaUrl(
      'kafka://svc:p%40ss@broker:9096?security_protocol=SASL_SSL&sasl_mechanism=SCRAM-SHA-512&servername=kafka.internal',
    )
    expect(parsed.securityProtocol).toBe('SASL_SSL')
    expect(parsed.sasl).toEqual({ mechanism: 'SCRAM-SHA-512', username: 'svc', password: 'p@ss' })
    expect(parsed.tls).toEqual({ servername: 'kafka.internal' })
    expect(parseKafkaUrl('kafka://svc:pw@broker').securityProtocol).toBe('SASL_PLAINTEXT')
  })

  it.each([
    ['kafka://', /host:9092/],
    ['kafka://broker?partitions=0', /partitions.*1 to/],
    ['kafka://broker?security_protocol=SASL_SSL', /needs a user and password/],
    ['kafka://broker?sasl_mechanism=GSSAPI', /sasl_mechanism needs/],
    ['kafka://u:p@broker?sasl_mechanism=GSSAPI', /must be one of PLAIN/],
    ['kafka://broker?ca=/x.pem', /need security_protocol SSL/],
    ['kafka://broker?security_protocol=SSL&ca=/no/such.pem', /cannot read "\/no\/such.pem"/],
    ['kafka://broker?retention=1', /unknown option "retention"/],
    ['kafka://broker:99999', /out of range/],
  ])('refuses %s with a clear error', (url, message) => {
    expect(() => parseKafkaUrl(url)).toThrow(message)
  })

  it('never shows the password in the address', () => {
    const t = new KafkaTransport('kafka://svc:Sup3r-Secret@broker:9092')
    expect(t.address).not.toContain('Sup3r-Secret')
    expect(t.address).toContain('***')
  })
})

describe.skipIf(!available)('the bridge on Kafka', () => {
  const examples = loadProject(EXAMPLES_YML)
  const fixtures = loadProject(FIXTURE_YML)
  const topicsOf = (spec: ToolServiceSpec) =>
    [spec.requestQueue, spec.responseQueue].map((q) => q.replace(/^(\w+):(\w+):/, '$2.$1.'))

  const suite = brokerSuite(startKafka, {
    // Leftovers of an earlier run: committed offsets and topics with other partition counts.
    prepare: () =>
      dropTopicsAndGroups(
        fixtures.services.flatMap(topicsOf),
        [...examples.services, ...fixtures.services].map((s) => `${s.id}-request`),
      ),
    startTimeoutMs: 300_000,
  })
  const { runtime, client, closing } = suite
  const transport = (url = suite.broker.url) => closing.connected(new KafkaTransport(url))

  // First, while the fixture topics have the one partition the offsets test below relies on.
  describeTransport('Kafka', {
    settings: resolveSettings({ broker: KAFKA_URL, port: 'off' }, {}),
    fixturesYml: FIXTURE_YML,
    callTimeoutMs: CALL_TIMEOUT_MS,
    maxMessageBytes: 10 * 1024 * 1024, // TrustGraph's producer limit
    bigMessageBytes: 10 * 1024 * 1024, // as much as TrustGraph's producer sends
    replicas:
      'Kafka shares a topic by partitions: two replicas on three partitions, and one killed outright, are tested below',
    outage: { restart: () => kafkaScript('restart').then(() => {}), recoveryLimitMs: 20_000 },
    flowControl: {
      queue: () => `request:tg:kafka-flow-${randomUUID().slice(0, 8)}`,
      drop: (queue) => dropTopicsAndGroups([queue.replace('request:tg:', 'tg.request.')], ['sub']),
    },
    unreachable: {
      transport: () =>
        new KafkaTransport('kafka://svc:Another-Secret@127.0.0.1:1', {
          connectRetry: { retries: 1, initialRetryTime: 10 },
        }),
      secret: 'Another-Secret',
    },
  })

  describe('the wire, as TrustGraph reads and writes it', () => {
    it('takes a request record from a plain producer and answers on tg.response.<topic> with an id header, no key, Python json.dumps bytes', async () => {
      const bridge = await runtime(examples)
      const requestTopic = 'tg.request.joke'
      const responseTopic = 'tg.response.joke'
      const consumer = new Consumer<Buffer, Buffer, string, string>({
        clientId: 'wire-test',
        groupId: `wire-test-${randomUUID()}`,
        bootstrapBrokers: ['127.0.0.1:9092'],
        autocommit: false,
        maxWaitTime: 200,
        deserializers: { headerKey: stringDeserializer, headerValue: stringDeserializer },
      })
      closing.add(() => consumer.close(true))
      const stream = await consumer.consume({ topics: [responseTopic], mode: MessagesStreamModes.LATEST })
      const received: { key: Buffer | undefined; value: Buffer; headers: Map<string, string> }[] = []
      stream.on('data', (m) => received.push({ key: m.key, value: m.value, headers: m.headers }))
      await new Promise((resolve) => (stream as unknown as NodeJS.EventEmitter).once('offsets', resolve))
      const producer = new Producer<Buffer, Buffer, string, string>({
        clientId: 'wire-test',
        bootstrapBrokers: ['127.0.0.1:9092'],
        serializers: { headerKey: stringSerializer, headerValue: stringSerializer },
      })
      closing.add(() => producer.close())
      const id = `tg-wire-${randomUUID()}`
      // What TrustGraph's producer sends: json.dumps of the request dataclass, properties as headers, no key.
      await producer.send({
        messages: [
          {
            topic: requestTopic,
            value: Buffer.from('{"config": "{\\"style\\": \\"pun\\"}", "arguments": "{\\"topic\\": \\"cats\\"}"}'),
            headers: { id },
          },
        ],
      })
      await waitFor('the response record', () => received.some((m) => m.headers.get('id') === id), CALL_TIMEOUT_MS)
      const response = received.find((m) => m.headers.get('id') === id)!
      expect(response.key ?? null).toBeNull()
      expect(Object.fromEntries(response.headers)).toEqual({ id })
      expect(response.value.toString('utf8')).toBe(
        '{"error": null, "response": "Hey there! Here\'s a pun for you:\\n\\nWhat do you call a pile of cats? A meowtain.", "end_of_stream": true}',
      )
      expect(bridge.bridge.inFlight).toBe(0)
    })
  })

  describe('offsets', () => {
    const spec = serviceById(fixtures, 'kafka-replica-service')
    const group = `${spec.id}-request`
    const topic = 'tg.request.kafka-replica'

    it('commits a request only once it and every request before it on the partition are answered', async () => {
      await runtime(fixtures)
      const t = await transport()
      const c = await client(t, spec)
      // The group may hold a commit from an earlier run: wait for the one past this request.
      const earlier = await committedOffset(group, topic)
      expect(await c.call({ arguments: { n: 0 } }, { timeoutMs: CALL_TIMEOUT_MS })).toBe('A:0')
      await waitFor('the commit of the first request', async () => (await committedOffset(group, topic)) > earlier)
      const before = await committedOffset(group, topic)

      // One request held open until the test lets it finish, then three quick ones behind it on the same (only) partition.
      const gate = join(mkdtempSync(join(tmpdir(), 'toolbridge-gate-')), 'open')
      const held = c.call({ arguments: { n: 1, gate } }, { timeoutMs: CALL_TIMEOUT_MS })
      held.catch(() => {}) // awaited below; not unhandled if an assertion fails first
      await new Promise((resolve) => setTimeout(resolve, 100))
      const quick = await Promise.all(
        [2, 3, 4].map((n) => c.call({ arguments: { n } }, { timeoutMs: CALL_TIMEOUT_MS })),
      )
      expect(quick).toEqual(['A:2', 'A:3', 'A:4'])
      // The quick ones are answered, but the one before them is not: nothing moves.
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(await committedOffset(group, topic)).toBe(before)

      writeFileSync(gate, '')
      expect(await held).toBe('A:1')
      await waitFor('the commit past all four', async () => (await committedOffset(group, topic)) === before + 4n)
    })
  })

  describe('replicas', () => {
    const spec = serviceById(fixtures, 'kafka-replica-service')
    const group = `${spec.id}-request`
    const threePartitions = () => `${suite.broker.url}?partitions=3`

    beforeAll(async () => {
      // A topic of three partitions, created by the bridge from the URL's partitions option.
      await dropTopicsAndGroups(topicsOf(spec), [group])
    })

    it('shares three partitions between two replicas, both answering', async () => {
      const a = await runtime(asReplica(fixtures, 'replicaA'), threePartitions())
      const b = await runtime(asReplica(fixtures, 'replicaB'), threePartitions())
      const metadata = await (async () => {
        const admin = kafkaAdmin()
        try {
          return await admin.metadata({ topics: ['tg.request.kafka-replica'] })
        } finally {
          await admin.close()
        }
      })()
      expect(metadata.topics.get('tg.request.kafka-replica')?.partitionsCount).toBe(3)
      await waitFor('both replicas to hold partitions', async () => {
        const members = await groupAssignments(group)
        return members.length === 2 && members.every((m) => m.partitions.length > 0)
      })
      const t = await transport()
      const tap = await ResponseTap.open(t, spec.responseQueue, CALL_TIMEOUT_MS)
      closing.add(() => tap.close())
      const { answers, ids, bothBusy } = await loadTwoReplicas(closing, [a, b], t, tap, spec.requestQueue)
      answers.forEach((text, n) => expect(text).toMatch(new RegExp(`^[AB]:${n}$`)))
      const byA = answers.filter((text) => text.startsWith('A:')).length
      const duplicates = ids.filter((id) => tap.messages(id).length > 1).length
      console.info(
        `Kafka: two replicas on 3 partitions answered 200 requests, ${byA} by A and ${200 - byA} by B, ${duplicates} answered twice`,
      )
      expect(bothBusy).toBe(true)
      expect(byA).toBeGreaterThan(0)
      expect(byA).toBeLessThan(200)
    })

    it('hands the requests of a replica killed mid-work (SIGKILL, no goodbye) to the other replica', async () => {
      // Replica A in a process of its own, killed outright; replica B in this one.
      const replicaA = new StartedBridge([
        '-c',
        FIXTURE_YML,
        'start',
        '--broker',
        threePartitions(),
        '--log-level',
        'warn',
      ])
      closing.add(() => replicaA.stop())
      await replicaA.printed(/toolbridge: serving on/)
      const b = await runtime(asReplica(fixtures, 'replicaB'), threePartitions())
      await waitFor('both replicas to hold partitions', async () => {
        const members = await groupAssignments(group)
        return members.length === 2 && members.every((m) => m.partitions.length > 0)
      })
      const t = await transport()
      const c = await client(t, spec)
      let killed = false
      const answeredBeforeKill: string[] = []
      const calls = Array.from({ length: 24 }, (_, n) =>
        c.call({ arguments: { n, ms: 2500 } }, { timeoutMs: 60_000 }).then((text) => {
          if (!killed) answeredBeforeKill.push(text)
          return text
        }),
      )
      // B busy means the requests are out; A took those of its partitions at the same time.
      await waitFor('replica B to be busy', () => b.bridge.inFlight > 0)
      await new Promise((resolve) => setTimeout(resolve, 300))
      const members = await groupAssignments(group)
      const killing = replicaA.stop()
      killed = true
      await killing
      const answers = await Promise.all(calls)
      answers.forEach((text, n) => expect(text).toMatch(new RegExp(`^[AB]:${n}$`)))
      // A died before its 2.5 s sleeps ended: everything was answered by B, including what A held.
      expect(answeredBeforeKill).toEqual([])
      expect(answers.every((text) => text.startsWith('B:'))).toBe(true)
      const held = members.map((m) => m.partitions.join('+')).join(' and ')
      console.info(
        `Kafka: replica A killed (partitions ${held} between the two); B answered all ${answers.length}, A's share after the group noticed`,
      )
    }, 120_000)
  })

  describe('the transport', () => {
    it('names message.max.bytes when the broker refuses a message for its size', async () => {
      const t = await transport()
      const small = 'tg.response.kafka-small-limit'
      await dropTopicsAndGroups([small], [])
      const admin = kafkaAdmin()
      await admin.createTopics({
        topics: [small],
        partitions: 1,
        replicas: 1,
        configs: [{ name: 'max.message.bytes', value: '1000' }],
      })
      await admin.close()
      const refused = (await t
        .publish('response:tg:kafka-small-limit', new Uint8Array(5000), {})
        .catch((err: unknown) => err)) as ToolbridgeError
      expect(refused).toBeInstanceOf(ToolbridgeError)
      expect(refused.kind).toBe('too-large')
      expect(refused.retriable).toBe(false)
      expect(refused.message).toContain('message.max.bytes')
      await dropTopicsAndGroups([small], [])
    })
  })

  describeTrustgraphClient("TrustGraph's own client (trustgraph-base, Kafka backend) calling the bridge", {
    settings: () => suite.settings,
    backend: () => ({ backend: 'kafka', bootstrapServers: '127.0.0.1:9092' }),
  })
})

if (!trustgraphInstalled())
  console.log(`skipping TrustGraph's Kafka client tests: needs TrustGraph's packages (${TRUSTGRAPH_INSTALL})`)
