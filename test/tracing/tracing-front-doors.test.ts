/**
 * A traced caller at the front doors: the HTTP gateway's `traceparent`
 * header and MCP's `_meta` go on with the request through the broker, so
 * the bridge's spans and the function join the caller's trace. Embedded
 * broker; the collector is unreachable (no trace backend needed here: what
 * is checked is the context the function is handed).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Runtime } from '../../bridge/runtime.ts'
import { startInProcess } from '../support/in-process-runtime.ts'

const HANDLERS = `
export async function context(event, context) {
  return JSON.stringify(context.clientContext?.Custom ?? null)
}
`
const YML = `service: front-doors
frameworkVersion: "3"
provider:
  name: aws
  runtime: nodejs24.x
functions:
  context:
    handler: handlers.context
    toolService:
      id: front-doors-context
      topic: front-doors-context
      tools:
        - name: context
          description: Answers with the trace context it was handed
`

const traceparentOf = () => `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`
const traceIdOf = (traceparent: string | undefined) => traceparent?.split('-')[1]

describe('the trace context of a caller at the front doors', () => {
  let dir: string
  let runtime: Runtime

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'toolbridge-front-doors-'))
    writeFileSync(join(dir, 'handlers.mjs'), HANDLERS)
    writeFileSync(join(dir, 'serverless.yml'), YML)
    runtime = await startInProcess(
      join(dir, 'serverless.yml'),
      {},
      {
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
          OTEL_BSP_MAX_QUEUE_SIZE: '16',
          OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '16',
        },
      },
    )
  })

  afterAll(async () => {
    await runtime?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  async function viaGateway(headers: Record<string, string>): Promise<Record<string, string> | null> {
    const response = await fetch(`${runtime.gateway!.url}/tools/context`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ arguments: {} }),
    })
    expect(response.status).toBe(200)
    const line = JSON.parse((await response.text()).trim()) as { response: string }
    return JSON.parse(line.response) as Record<string, string> | null
  }

  it("continues the HTTP caller's traceparent, with its tracestate and baggage", async () => {
    const caller = traceparentOf()
    const seen = await viaGateway({ traceparent: caller, tracestate: 'gw=1', baggage: 'tenant=acme' })
    expect(traceIdOf(seen?.traceparent)).toBe(traceIdOf(caller))
    expect(seen?.traceparent).not.toBe(caller)
    expect(seen).toMatchObject({ tracestate: 'gw=1', baggage: 'tenant=acme' })
  })

  it('starts a new trace for a malformed traceparent header, and answers as usual', async () => {
    const junk = `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`
    const seen = await viaGateway({ traceparent: junk, baggage: 'tenant=acme' })
    expect(seen?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    expect(traceIdOf(seen?.traceparent)).not.toBe('0'.repeat(32))
    // Without a valid traceparent, nothing of the caller's is passed on.
    expect(seen?.baggage).toBeUndefined()
  })

  it("continues an MCP client's traceparent from _meta", async () => {
    const client = new Client({ name: 'toolbridge-test', version: '1' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${runtime.gateway!.url}/mcp`)))
    try {
      const caller = traceparentOf()
      const result = (await client.callTool({
        name: 'context',
        arguments: {},
        _meta: { traceparent: caller, tracestate: 'mcp=1' },
      })) as CallToolResult
      const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('')
      const seen = JSON.parse(text) as Record<string, string>
      expect(traceIdOf(seen.traceparent)).toBe(traceIdOf(caller))
      expect(seen.tracestate).toBe('mcp=1')
    } finally {
      await client.close()
    }
  })
})
