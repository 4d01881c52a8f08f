/**
 * What toolbridge reads of TrustGraph's configuration service messages
 * (shared/config-protocol.ts) when they are not what the dataclasses say:
 * each field's refusal names it, and absent fields take the dataclass
 * defaults. config-service.test.ts covers the messages as both sides send them.
 */
import { describe, expect, it } from 'vitest'
import {
  decodeConfigPush,
  decodeConfigRequest,
  decodeConfigResponse,
  DEFAULT_WORKSPACE,
} from '../../shared/config-protocol.ts'

const json = (value: unknown) =>
  new Uint8Array(Buffer.from(typeof value === 'string' ? value : JSON.stringify(value), 'utf8'))

describe('decodeConfigRequest', () => {
  it('names the field that is wrong, in keys and values by its place', () => {
    expect(decodeConfigRequest(json({ operation: 1 }))).toStrictEqual({
      ok: false,
      message: '"operation" must be a string, got number',
    })
    expect(decodeConfigRequest(json({ workspace: [] }))).toStrictEqual({
      ok: false,
      message: '"workspace" must be a string, got array',
    })
    expect(decodeConfigRequest(json({ type: true }))).toStrictEqual({
      ok: false,
      message: '"type" must be a string, got boolean',
    })
    expect(decodeConfigRequest(json({ keys: {} }))).toStrictEqual({
      ok: false,
      message: '"keys" must be a list, got object',
    })
    expect(decodeConfigRequest(json({ keys: ['tool'] }))).toStrictEqual({
      ok: false,
      message: 'keys[0] must be an object, got string',
    })
    expect(decodeConfigRequest(json({ keys: [{ type: 'tool', key: 'a' }, { type: 5 }] }))).toStrictEqual({
      ok: false,
      message: 'keys[1]."type" must be a string, got number',
    })
    expect(decodeConfigRequest(json({ keys: [{ type: 'tool', key: 7 }] }))).toStrictEqual({
      ok: false,
      message: 'keys[0]."key" must be a string, got number',
    })
    expect(decodeConfigRequest(json({ values: [{ type: 'tool', key: 'a', value: 3 }] }))).toStrictEqual({
      ok: false,
      message: 'values[0]."value" must be a string, got number',
    })
    expect(decodeConfigRequest(json({ values: [{ type: 'tool', key: 'a', value: 'v', workspace: 1 }] }))).toStrictEqual(
      {
        ok: false,
        message: 'values[0]."workspace" must be a string, got number',
      },
    )
    expect(decodeConfigRequest(json({ values: [{ type: 1 }] }))).toMatchObject({
      ok: false,
      message: 'values[0]."type" must be a string, got number',
    })
    expect(decodeConfigRequest(json([]))).toStrictEqual({
      ok: false,
      message: 'ConfigRequest must be a JSON object, got array',
    })
  })

  it('gives absent fields the dataclass defaults, a null value included', () => {
    expect(decodeConfigRequest(json({ values: [{ type: 'tool', key: 'a', value: null }] }))).toStrictEqual({
      ok: true,
      value: {
        operation: '',
        workspace: '',
        keys: [],
        type: '',
        values: [{ type: 'tool', key: 'a', value: null, workspace: '' }],
      },
    })
  })
})

describe('decodeConfigResponse', () => {
  it('reads a response with every field', () => {
    const body = {
      version: 4,
      values: [{ type: 'tool', key: 'a', value: '{}', workspace: 'w' }],
      directory: ['a', 'b'],
      config: { tool: { a: '{}' } },
      error: { type: 'not-found', message: 'no such key' },
    }
    expect(decodeConfigResponse(json(body))).toStrictEqual({ ok: true, value: body })
  })

  it('gives absent fields the dataclass defaults, and an error without type or message empty ones', () => {
    expect(decodeConfigResponse(json({}))).toStrictEqual({
      ok: true,
      value: { version: 0, values: [], directory: [], config: {}, error: null },
    })
    expect(decodeConfigResponse(json({ version: '4', error: {} }))).toStrictEqual({
      ok: true,
      value: { version: 0, values: [], directory: [], config: {}, error: { type: '', message: '' } },
    })
  })

  it('refuses each field that is not what the dataclass says, naming it', () => {
    expect(decodeConfigResponse(json('[1]'))).toStrictEqual({
      ok: false,
      message: 'ConfigResponse must be a JSON object, got array',
    })
    expect(decodeConfigResponse(json('{'))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^body is not valid JSON: /),
    })
    expect(decodeConfigResponse(new Uint8Array([0xff]))).toStrictEqual({
      ok: false,
      message: 'body is not valid UTF-8',
    })
    expect(decodeConfigResponse(json({ values: [{ key: 1 }] }))).toStrictEqual({
      ok: false,
      message: 'values[0]."key" must be a string, got number',
    })
    for (const directory of ['a', ['a', 1], {}]) {
      expect(decodeConfigResponse(json({ directory }))).toStrictEqual({
        ok: false,
        message: '"directory" must be a list of strings',
      })
    }
    expect(decodeConfigResponse(json({ config: [] }))).toStrictEqual({
      ok: false,
      message: '"config" must be an object',
    })
    expect(decodeConfigResponse(json({ error: 'boom' }))).toStrictEqual({
      ok: false,
      message: '"error" must be an object or null',
    })
  })
})

describe('decodeConfigPush', () => {
  it('reads the version and the changes; defaults for what is absent', () => {
    expect(
      decodeConfigPush(json({ version: 3, changes: { tool: ['default'] }, workspace_changes: null })),
    ).toStrictEqual({
      ok: true,
      value: { version: 3, changes: { tool: ['default'] } },
    })
    expect(decodeConfigPush(json({ version: 'x' }))).toStrictEqual({ ok: true, value: { version: 0, changes: {} } })
  })

  it('refuses what is not a push', () => {
    expect(decodeConfigPush(json('"push"'))).toStrictEqual({
      ok: false,
      message: 'ConfigPush must be a JSON object, got string',
    })
    expect(decodeConfigPush(json({ changes: ['tool'] }))).toStrictEqual({
      ok: false,
      message: '"changes" must be an object',
    })
    expect(decodeConfigPush(json('not json'))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^body is not valid JSON: /),
    })
  })
})

it('names the workspace TrustGraph uses when none is given "default"', () => {
  expect(DEFAULT_WORKSPACE).toBe('default')
})
