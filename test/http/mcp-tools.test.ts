/** Tools as MCP describes them, and answers as MCP results (bridge/http/mcp-tools.ts). */
import { describe, expect, it } from 'vitest'
import { describeTools, toolAnnotations } from '../../bridge/http/mcp-tools.ts'
import type { ToolSpec } from '../../bridge/project/tool-services.ts'
import { ConfigError } from '../../shared/errors.ts'

const tool = (fields: Partial<ToolSpec> = {}): ToolSpec => ({
  name: 'place',
  description: 'A place',
  config: {},
  arguments: [{ name: 'city', type: 'string', description: 'A city', required: true }],
  annotations: {},
  ...fields,
})

const PLACE = {
  type: 'object',
  properties: { city: { type: 'string' }, population: { type: 'integer', minimum: 0 } },
  required: ['city'],
}

describe('toolAnnotations', () => {
  it("gives a tool that declares nothing MCP's cautious defaults: it may write, destroy, repeat its effect and reach out", () => {
    expect(toolAnnotations({})).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    })
  })

  it('takes a read-only tool as neither destructive nor anything but idempotent, unless it says otherwise', () => {
    expect(toolAnnotations({ readOnlyHint: true })).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: true,
    })
    expect(toolAnnotations({ readOnlyHint: true, idempotentHint: false, destructiveHint: true })).toMatchObject({
      destructiveHint: true,
      idempotentHint: false,
    })
  })

  it('keeps every declared hint as declared', () => {
    const declared = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false }
    expect(toolAnnotations(declared)).toEqual(declared)
  })
})

describe('describeTools', () => {
  it('lists name, description and the input schema of the declared arguments, a title and an output schema only when declared', () => {
    const { list } = describeTools([tool(), tool({ name: 'titled', title: 'Place lookup', output: PLACE })])
    const cityInput = {
      type: 'object',
      properties: { city: { type: 'string', description: 'A city' } },
      required: ['city'],
    }
    // Strictly: a field left out is absent, not present and undefined.
    expect(list).toStrictEqual([
      {
        name: 'place',
        description: 'A place',
        inputSchema: cityInput,
        annotations: toolAnnotations({}),
      },
      {
        name: 'titled',
        title: 'Place lookup',
        description: 'A place',
        inputSchema: cityInput,
        annotations: toolAnnotations({}),
        outputSchema: PLACE,
      },
    ])
  })

  it('answers a tool without an output schema with its text alone, JSON or not', () => {
    const tools = describeTools([tool()])
    expect(tools.result('place', '{"city":"Oslo"}')).toEqual({ content: [{ type: 'text', text: '{"city":"Oslo"}' }] })
    expect(tools.result('place', 'not json')).toEqual({ content: [{ type: 'text', text: 'not json' }] })
  })

  it('answers a tool with an output schema with the parsed JSON as structuredContent and the same JSON as text', () => {
    const tools = describeTools([tool({ output: PLACE })])
    const text = '{"city":"Oslo","population":709000}'
    expect(tools.result('place', text)).toEqual({
      content: [{ type: 'text', text }],
      structuredContent: { city: 'Oslo', population: 709000 },
    })
  })

  it('answers an answer that is not JSON, or that the schema refuses, with an error result saying why', () => {
    const tools = describeTools([tool({ output: PLACE })])
    expect(tools.result('place', 'Oslo')).toEqual({
      content: [
        {
          type: 'text',
          text: expect.stringMatching(
            /^invalid-output: the answer is not JSON, as the tool's output schema requires: /,
          ),
        },
      ],
      isError: true,
    })
    expect(tools.result('place', '{"population":-1}')).toEqual({
      content: [
        {
          type: 'text',
          text: "invalid-output: the answer does not match the tool's output schema: data must have required property 'city', data/population must be >= 0",
        },
      ],
      isError: true,
    })
  })

  it('takes JSON Schema 2020-12 keywords', () => {
    const tools = describeTools([
      tool({ output: { type: 'object', properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }] } } } }),
    ])
    expect(tools.result('place', '{"pair":["a",1]}').isError).toBeUndefined()
    expect(tools.result('place', '{"pair":[1]}').isError).toBe(true)
  })

  it('refuses an output schema that is not a JSON Schema, naming the tool', () => {
    expect(() => describeTools([tool({ output: { type: 'no-such-type' } })])).toThrow(ConfigError)
    expect(() => describeTools([tool({ output: { type: 'no-such-type' } })])).toThrow(
      /tool "place" output.*not a JSON Schema/,
    )
  })
})
