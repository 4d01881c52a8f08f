/**
 * toolbridge's in-memory configuration service against TrustGraph itself,
 * on RabbitMQ: TrustGraph's own config client and agent loader use it as
 * they would use TrustGraph's service, and for the same requests it answers
 * the same bytes as TrustGraph's own config service (trustgraph-flow
 * config-svc, its Cassandra store swapped for memory). Needs rabbitmq-server
 * and scripts/trustgraph-venv.sh; .ci/run provides both.
 */
import { randomUUID } from 'node:crypto'
import type { ChildProcess } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startConfigService, type ConfigService } from '../../bridge/trustgraph/config-service.ts'
import { loadProject } from '../../bridge/project/project.ts'
import { registrationItems } from '../../bridge/trustgraph/registration.ts'
import { createTransport } from '../../bridge/transports/create-transport.ts'
import type { Transport } from '../../bridge/transports/transport.ts'
import { CONFIG_REQUEST_QUEUE, CONFIG_RESPONSE_QUEUE } from '../../shared/config-protocol.ts'
import { ID_PROPERTY } from '../../shared/protocol.ts'
import { RABBITMQ_INSTALL, rabbitmqInstalled, startRabbitmq, type RabbitBroker } from '../support/rabbitmq.ts'
import { interopReady } from '../support/interop-ready.ts'
import { agentTools, startTrustgraphConfigService, stopChild, trustgraphConfig } from '../support/trustgraph-config.ts'

const ready = interopReady('configuration service interop tests', {
  here: rabbitmqInstalled(),
  install: `rabbitmq-server (${RABBITMQ_INSTALL})`,
})

/** Requests as TrustGraph's clients write them (json.dumps of the whole dataclass), covering every operation and error. */
const SEQUENCE = [
  '{"operation": "put", "workspace": "default", "keys": [], "type": "", "values": [{"type": "tool", "key": "b", "value": "{\\"x\\": \\"\\u00e9\\"}", "workspace": ""}, {"type": "tool", "key": "a", "value": "1", "workspace": ""}, {"type": "mcp", "key": "m", "value": "2", "workspace": ""}]}',
  '{"operation": "put", "workspace": "other", "keys": [], "type": "", "values": [{"type": "tool", "key": "c", "value": "3", "workspace": ""}]}',
  '{"operation": "get", "workspace": "default", "keys": [{"type": "tool", "key": "a"}, {"type": "tool", "key": "missing"}], "type": "", "values": []}',
  '{"operation": "list", "workspace": "default", "keys": [], "type": "tool", "values": []}',
  '{"operation": "getvalues", "workspace": "default", "keys": [], "type": "tool", "values": []}',
  '{"operation": "config", "workspace": "default", "keys": [], "type": "", "values": []}',
  '{"operation": "getkeys-all-ws", "workspace": "", "keys": [], "type": "tool", "values": []}',
  '{"operation": "getvalues-all-ws", "workspace": "", "keys": [], "type": "tool", "values": []}',
  '{"operation": "delete", "workspace": "default", "keys": [{"type": "tool", "key": "a"}], "type": "", "values": []}',
  '{"operation": "list", "workspace": "default", "keys": [], "type": "tool", "values": []}',
  '{"operation": "put", "workspace": "", "keys": [], "type": "", "values": [{"type": "tool", "key": "z", "value": "1", "workspace": ""}]}',
  '{"operation": "explode", "workspace": "default", "keys": [], "type": "", "values": []}',
  '{"operation": "list", "type": "tool", "workspace": "default"}',
]

/** Sends each request in turn on the broker and returns each answer's bytes as text. */
async function answersTo(transport: Transport, requests: string[]): Promise<string[]> {
  const waiting = new Map<string, (body: string) => void>()
  const consumer = await transport.subscribe(CONFIG_RESPONSE_QUEUE, (delivery) => {
    delivery.ack()
    waiting.get(delivery.properties[ID_PROPERTY] ?? '')?.(Buffer.from(delivery.body).toString('utf8'))
  })
  try {
    const answers: string[] = []
    for (const request of requests) {
      const id = randomUUID()
      const answer = new Promise<string>((resolve) => waiting.set(id, resolve))
      await transport.publish(CONFIG_REQUEST_QUEUE, Buffer.from(request), { [ID_PROPERTY]: id })
      answers.push(await answer)
    }
    return answers
  } finally {
    await consumer.close()
  }
}

describe.skipIf(!ready)('the in-memory configuration service with TrustGraph on RabbitMQ', () => {
  let broker: RabbitBroker
  let serviceTransport: Transport
  let clientTransport: Transport
  let service: ConfigService | undefined
  let trustgraphAnswers: string[]

  beforeAll(async () => {
    broker = await startRabbitmq()
    clientTransport = await createTransport(broker.url)
    await clientTransport.connect()
    // TrustGraph's own service first, alone on the queue; then ours in its place.
    let trustgraph: ChildProcess | undefined
    try {
      trustgraph = await startTrustgraphConfigService()
      trustgraphAnswers = await answersTo(clientTransport, SEQUENCE)
    } finally {
      await stopChild(trustgraph)
    }
    serviceTransport = await createTransport(broker.url)
    await serviceTransport.connect()
    service = await startConfigService({ transport: serviceTransport })
  })
  afterAll(async () => {
    await service?.stop()
    await serviceTransport?.close()
    await clientTransport?.close()
    await broker?.stop()
  })

  it("answers every operation with the bytes TrustGraph's own config service answers", async () => {
    const ours = await answersTo(clientTransport, SEQUENCE)
    expect(ours).toEqual(trustgraphAnswers)
    // Not vacuous: the sequence reached values, versions and both kinds of error.
    expect(trustgraphAnswers[2]).toBe(
      '{"version": 2, "values": [{"type": "tool", "key": "a", "value": "1", "workspace": ""}, {"type": "tool", "key": "missing", "value": null, "workspace": ""}], "directory": [], "config": {}, "error": null}',
    )
    expect(trustgraphAnswers[10]).toContain('"error": {"type": "bad-request", "message": "Workspace is required"}')
    expect(trustgraphAnswers[11]).toContain('"error": {"type": "bad-operation", "message": "Bad operation"}')
  })

  it("serves TrustGraph's own config client: put_many, get, keys, delete_many", async () => {
    const results = await trustgraphConfig([
      {
        op: 'put',
        workspace: 'tg',
        values: [
          ['tool', 'k1', 'v1'],
          ['tool', 'k2', 'v2'],
        ],
      },
      { op: 'get', workspace: 'tg', type: 'tool', key: 'k2' },
      { op: 'list', workspace: 'tg', type: 'tool' },
      { op: 'delete', workspace: 'tg', keys: [['tool', 'k1']] },
      { op: 'list', workspace: 'tg', type: 'tool' },
      { op: 'get', workspace: 'tg', type: 'tool', key: 'k1' },
    ])
    expect(results).toEqual([{}, { value: 'v2' }, { keys: ['k1', 'k2'] }, {}, { keys: ['k2'] }, { value: null }])
  })

  it("feeds TrustGraph's agent loader the tools registered in it", async () => {
    const items = registrationItems(loadProject('serverless.yml').services)
    await trustgraphConfig([
      {
        op: 'put',
        workspace: 'agents',
        values: items.map((i) => [i.type, i.key, i.value!] as [string, string, string]),
      },
    ])
    // Other workspaces hold the byte test's values, which the agent refuses; it loads each workspace whole or not at all.
    const { workspaces } = await agentTools()
    expect(Object.keys(workspaces.agents!).sort()).toEqual(['calculate', 'tell-joke', 'tell-story'])
    expect(workspaces.agents!['tell-joke']).toMatchObject({
      implementation: 'ToolServiceImpl',
      settings: {
        request_queue: 'request:tg:joke',
        response_queue: 'response:tg:joke',
        config_values: { style: 'pun' },
      },
    })
  })
})
