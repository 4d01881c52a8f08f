/**
 * TrustGraph's configuration service protocol (shared/config-protocol.ts)
 * and toolbridge's in-memory configuration service (bridge/trustgraph/config-service.ts)
 * on the embedded broker, driven by toolbridge's own config client. The
 * same service answers TrustGraph's own client in
 * config-service.interop.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ConfigClient, ConfigServiceError } from '../../bridge/trustgraph/config-client.ts'
import { startConfigService, type ConfigService } from '../../bridge/trustgraph/config-service.ts'
import { MemoryBroker, MemoryTransport } from '../../bridge/transports/memory/memory-transport.ts'
import {
  CONFIG_PUSH_QUEUE,
  CONFIG_REQUEST_QUEUE,
  CONFIG_RESPONSE_QUEUE,
  configRequest,
  configResponse,
  configValue,
  decodeConfigPush,
  decodeConfigRequest,
  decodeConfigResponse,
  encodeConfigPush,
  encodeConfigRequest,
  encodeConfigResponse,
  type ConfigPush,
  type ConfigResponse,
} from '../../shared/config-protocol.ts'
import { ID_PROPERTY } from '../../shared/protocol.ts'

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8')
const bytes = (s: string) => Buffer.from(s, 'utf8')

describe('ConfigRequest / ConfigResponse / ConfigPush on the wire', () => {
  // What TrustGraph 2.11.1 sends: json.dumps(dataclass_to_dict(...)) of its schema dataclasses.
  it('encodes a put ConfigRequest byte for byte as TrustGraph does, non-ASCII escaped', () => {
    const request = configRequest({
      operation: 'put',
      workspace: 'default',
      values: [configValue('tool', 'k', '{"a": "é"}')],
    })
    expect(text(encodeConfigRequest(request))).toBe(
      '{"operation": "put", "workspace": "default", "keys": [], "type": "", "values": [{"type": "tool", "key": "k", "value": "{\\"a\\": \\"\\u00e9\\"}", "workspace": ""}]}',
    )
  })

  it('encodes a get ConfigRequest and the answers byte for byte as TrustGraph does', () => {
    expect(
      text(
        encodeConfigRequest(
          configRequest({ operation: 'get', workspace: 'default', keys: [{ type: 'tool', key: 'k' }] }),
        ),
      ),
    ).toBe(
      '{"operation": "get", "workspace": "default", "keys": [{"type": "tool", "key": "k"}], "type": "", "values": []}',
    )
    expect(text(encodeConfigResponse(configResponse()))).toBe(
      '{"version": 0, "values": [], "directory": [], "config": {}, "error": null}',
    )
    expect(text(encodeConfigResponse(configResponse({ version: 3, values: [configValue('tool', 'k', null)] })))).toBe(
      '{"version": 3, "values": [{"type": "tool", "key": "k", "value": null, "workspace": ""}], "directory": [], "config": {}, "error": null}',
    )
    expect(
      text(encodeConfigResponse(configResponse({ error: { type: 'bad-request', message: 'Workspace is required' } }))),
    ).toBe(
      '{"version": 0, "values": [], "directory": [], "config": {}, "error": {"type": "bad-request", "message": "Workspace is required"}}',
    )
    expect(text(encodeConfigPush({ version: 3, changes: { tool: ['default'] } }))).toBe(
      '{"version": 3, "changes": {"tool": ["default"]}, "workspace_changes": null}',
    )
  })

  it("decodes what it encodes, and a request with only some fields (as TrustGraph's gateway sends)", () => {
    const request = configRequest({ operation: 'delete', workspace: 'w', keys: [{ type: 'tool', key: 'a' }] })
    expect(decodeConfigRequest(encodeConfigRequest(request))).toEqual({ ok: true, value: request })
    expect(decodeConfigRequest(bytes('{"operation": "list", "type": "tool"}'))).toEqual({
      ok: true,
      value: configRequest({ operation: 'list', type: 'tool' }),
    })
    const response = configResponse({ version: 2, directory: ['a', 'b'], config: { tool: { a: '1' } } })
    expect(decodeConfigResponse(encodeConfigResponse(response))).toEqual({ ok: true, value: response })
  })

  it('names the field at fault in a request it cannot read', () => {
    const refusals: [string, string][] = [
      ['[]', 'ConfigRequest must be a JSON object, got array'],
      ['{"operation": 1}', '"operation" must be a string, got number'],
      ['{"operation": "get", "keys": [{"type": "tool", "key": 5}]}', 'keys[0]."key" must be a string, got number'],
      ['{"operation": "put", "values": {}}', '"values" must be a list, got object'],
    ]
    for (const [wire, message] of refusals) expect(decodeConfigRequest(bytes(wire))).toEqual({ ok: false, message })
    expect(decodeConfigRequest(bytes('{'))).toMatchObject({
      ok: false,
      message: expect.stringContaining('not valid JSON'),
    })
  })
})

describe('the in-memory configuration service on the embedded broker', () => {
  let broker: MemoryBroker
  let serviceTransport: MemoryTransport
  let clientTransport: MemoryTransport
  let service: ConfigService
  let client: ConfigClient
  let pushes: ConfigPush[]

  beforeEach(async () => {
    broker = new MemoryBroker()
    serviceTransport = new MemoryTransport(broker)
    clientTransport = new MemoryTransport(broker)
    await serviceTransport.connect()
    await clientTransport.connect()
    service = await startConfigService({ transport: serviceTransport })
    client = new ConfigClient(clientTransport, { timeoutMs: 5_000 })
    await client.start()
    pushes = []
    await clientTransport.subscribe(CONFIG_PUSH_QUEUE, (delivery) => {
      delivery.ack()
      const push = decodeConfigPush(delivery.body)
      if (push.ok) pushes.push(push.value)
    })
  })
  afterEach(async () => {
    await client.close()
    await service.stop()
    await clientTransport.close()
    await serviceTransport.close()
  })

  /** Sends raw bytes and returns the raw answer, as any client on the broker would see it. */
  async function raw(body: string, id = `raw-${Math.random()}`): Promise<ConfigResponse> {
    const answer = new Promise<Uint8Array>((resolve) => {
      void clientTransport.subscribe(CONFIG_RESPONSE_QUEUE, (delivery) => {
        delivery.ack()
        if (delivery.properties[ID_PROPERTY] === id) resolve(delivery.body)
      })
    })
    await new Promise((resolve) => setImmediate(resolve))
    await clientTransport.publish(CONFIG_REQUEST_QUEUE, bytes(body), { [ID_PROPERTY]: id })
    const decoded = decodeConfigResponse(await answer)
    if (!decoded.ok) throw new Error(decoded.message)
    return decoded.value
  }

  it('reads back with get what put stored, null for a key it does not have', async () => {
    await client.put('default', [
      configValue('tool', 'tell-joke', '{"name": "tell-joke"}'),
      configValue('tool-service', 'joke-service', '{}'),
    ])
    expect(
      await client.get('default', [
        { type: 'tool', key: 'tell-joke' },
        { type: 'tool', key: 'nope' },
      ]),
    ).toEqual(['{"name": "tell-joke"}', null])
    expect(await client.get('other', [{ type: 'tool', key: 'tell-joke' }])).toEqual([null])
  })

  it('lists keys sorted, gets values by type, and forgets deleted keys', async () => {
    await client.put('default', [
      configValue('tool', 'b', '2'),
      configValue('tool', 'a', '1'),
      configValue('mcp', 'a', 'x'),
    ])
    expect(await client.list('default', 'tool')).toEqual(['a', 'b'])
    expect(await client.getValues('default', 'tool')).toEqual({ a: '1', b: '2' })
    await client.delete('default', [{ type: 'tool', key: 'a' }])
    expect(await client.list('default', 'tool')).toEqual(['b'])
    expect(await client.list('default', 'mcp')).toEqual(['a'])
  })

  it('answers `config` with the whole workspace and the -all-ws operations across workspaces', async () => {
    await client.put('w1', [configValue('tool', 'a', '1')])
    await client.put('w2', [configValue('tool', 'b', '2'), configValue('mcp', 'm', '3')])
    expect((await client.request({ operation: 'config', workspace: 'w2' })).config).toEqual({
      mcp: { m: '3' },
      tool: { b: '2' },
    })
    const all = await client.request({ operation: 'getvalues-all-ws', type: 'tool' })
    expect(all.values).toEqual([configValue('tool', 'a', '1', 'w1'), configValue('tool', 'b', '2', 'w2')])
    const keys = await client.request({ operation: 'getkeys-all-ws', type: 'tool' })
    expect(keys.values).toEqual([configValue('tool', 'a', '', 'w1'), configValue('tool', 'b', '', 'w2')])
    expect(keys.version).toBe(2)
  })

  it('bumps the version on every put and delete and pushes the changed types on notify:tg:config', async () => {
    await client.put('default', [configValue('tool', 'a', '1'), configValue('tool-service', 's', '{}')])
    await client.delete('default', [{ type: 'tool', key: 'a' }])
    expect((await client.request({ operation: 'list', workspace: 'default', type: 'tool' })).version).toBe(2)
    await expect
      .poll(() => pushes)
      .toEqual([
        { version: 1, changes: { tool: ['default'], 'tool-service': ['default'] } },
        { version: 2, changes: { tool: ['default'] } },
      ])
  })

  it('announces no change in a reserved workspace ("_..."), as TrustGraph\'s does not', async () => {
    await client.put('__template__', [configValue('tool', 'a', '1')])
    await expect.poll(() => pushes).toEqual([{ version: 1, changes: {} }])
  })

  it("refuses a workspace operation without a workspace with TrustGraph's bad-request error", async () => {
    const error = await client.put('', [configValue('tool', 'a', '1')]).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigServiceError)
    expect(error).toMatchObject({
      type: 'bad-request',
      message: 'configuration service refused: bad-request: Workspace is required',
    })
    expect(service.store.version).toBe(0)
  })

  it("answers an unknown operation with TrustGraph's bad-operation error", async () => {
    expect((await raw('{"operation": "explode", "workspace": "default"}')).error).toEqual({
      type: 'bad-operation',
      message: 'Bad operation',
    })
  })

  it('answers a request it cannot read with config-error, and keeps serving', async () => {
    expect((await raw('not json')).error).toMatchObject({
      type: 'config-error',
      message: expect.stringContaining('not valid JSON'),
    })
    expect((await raw('{"operation": "get", "workspace": "w", "keys": "tool"}')).error).toEqual({
      type: 'config-error',
      message: '"keys" must be a list, got string',
    })
    await client.put('default', [configValue('tool', 'a', '1')])
    expect(await client.get('default', [{ type: 'tool', key: 'a' }])).toEqual(['1'])
  })

  it('answers each client under its own request id', async () => {
    await client.put('default', [configValue('tool', 'a', '1')])
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        raw(`{"operation": "list", "workspace": "default", "type": "tool"}`, `id-${i}`),
      ),
    )
    for (const answer of answers) expect(answer.directory).toEqual(['a'])
  })
})
