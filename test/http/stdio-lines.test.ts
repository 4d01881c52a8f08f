/**
 * The lines of `toolbridge mcp`'s stdin (bridge/http/stdio-lines.ts): good JSON-RPC lines pass
 * unchanged, every other line gets its JSON-RPC error and the session goes on. The whole command on
 * real pipes is in hardening-http.test.ts.
 */
import { PassThrough, type Readable } from 'node:stream'
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js'
import { describe, expect, it } from 'vitest'
import { type LineError, MAX_LINE_BYTES, jsonRpcLines } from '../../bridge/http/stdio-lines.ts'

const PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
const NOTE = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
const TOO_LONG = { code: -32700, message: `Parse error: line over ${MAX_LINE_BYTES} bytes` }

/** Writes `chunks` to a pipe through jsonRpcLines; the lines it passes on, and what it refused, in order. */
async function feed(chunks: (string | Buffer)[]) {
  const input = new PassThrough()
  const events: (string | LineError)[] = []
  const lines: Readable = jsonRpcLines(input, (error) => events.push(error))
  const passed: string[] = []
  lines.on('data', (line: Buffer) => {
    passed.push(line.toString('utf8'))
    events.push(line.toString('utf8'))
  })
  const ended = new Promise((resolve) => lines.on('end', resolve))
  for (const chunk of chunks) input.write(chunk)
  input.end()
  await ended
  return { passed, events }
}

describe('jsonRpcLines', () => {
  it('passes JSON-RPC lines on unchanged, one line each with its newline, and skips blank ones', async () => {
    const { events } = await feed([`${PING}\n\n  \r\n${NOTE}\n`])
    expect(events).toEqual([`${PING}\n`, `${NOTE}\n`])
  })

  it('joins a line sent in pieces, and passes on a last line that has no newline', async () => {
    const { passed } = await feed([
      PING.slice(0, 10),
      PING.slice(10, 20),
      `${PING.slice(20)}\n${NOTE.slice(0, 5)}`,
      NOTE.slice(5),
    ])
    expect(passed).toEqual([`${PING}\n`])
  })

  it('answers a line that is not JSON, a batch, and JSON that is not JSON-RPC, and goes on', async () => {
    const { events } = await feed([`not json\n[${PING}]\n{"hello":"world"}\n${PING}\n`])
    expect(events).toEqual([
      { code: -32700, message: 'Parse error: the line is not JSON' },
      { code: -32600, message: 'Invalid Request: JSON-RPC batches are not supported; send one message per request' },
      { code: -32600, message: 'Invalid Request: not a JSON-RPC message' },
      `${PING}\n`,
    ])
  })

  it("takes lines as long as the MCP SDK's buffer holds with their newline", () => {
    expect(MAX_LINE_BYTES + 1).toBe(STDIO_DEFAULT_MAX_BUFFER_SIZE)
  })

  it('passes a line of exactly the longest size, and refuses one byte more', async () => {
    const padded = (size: number) =>
      `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"${'x'.repeat(size - 70)}"}}}`
    expect(padded(100)).toHaveLength(100)
    const longest = padded(MAX_LINE_BYTES)
    const { events } = await feed([`${longest}\n`, `${padded(MAX_LINE_BYTES + 1)}\n`, `${PING}\n`])
    expect(events.map((e) => (typeof e === 'string' ? e.length : e))).toEqual([
      MAX_LINE_BYTES + 1,
      TOO_LONG,
      PING.length + 1,
    ])
  })

  it('refuses an over-long line sent in pieces as soon as it is too long, without waiting for its end, and goes on after it', async () => {
    const input = new PassThrough()
    const events: (string | LineError)[] = []
    const lines = jsonRpcLines(input, (error) => events.push(error))
    lines.on('data', (line: Buffer) => events.push(line.toString('utf8')))
    const piece = 'x'.repeat(1 << 20)
    for (let i = 0; i < 9; i++) input.write(piece)
    await new Promise((resolve) => setImmediate(resolve))
    expect(events).toEqual([])
    input.write(piece) // 10 MiB held: one byte past the longest line
    await new Promise((resolve) => setImmediate(resolve))
    expect(events).toEqual([TOO_LONG])
    input.write(piece)
    input.end(`tail\n${PING}\n`)
    await new Promise((resolve) => lines.on('end', resolve))
    expect(events).toEqual([TOO_LONG, `${PING}\n`])
  })

  it('joins pieces up to the longest size without refusing them', async () => {
    const line = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"${'x'.repeat(MAX_LINE_BYTES - 70)}"}}}`
    const half = Math.floor(line.length / 2)
    const { events } = await feed([`${PING}\n${line.slice(0, half)}`, line.slice(half), `\n${PING}\n`])
    expect(events.map((e) => (typeof e === 'string' ? e.length : e))).toEqual([
      PING.length + 1,
      MAX_LINE_BYTES + 1,
      PING.length + 1,
    ])
  })

  it("ends when its input ends, and fails with its input's error", async () => {
    const input = new PassThrough()
    const lines = jsonRpcLines(input, () => {})
    const failed = new Promise((resolve) => lines.on('error', resolve))
    lines.resume()
    input.destroy(new Error('stdin broke'))
    expect(await failed).toEqual(new Error('stdin broke'))
  })

  it('stops reading its input while the lines it passed on are not read', async () => {
    const input = new PassThrough()
    const lines = jsonRpcLines(input, () => {})
    const many = `${PING}\n`.repeat(2000)
    input.write(many)
    await new Promise((resolve) => setImmediate(resolve))
    expect(input.isPaused()).toBe(true)
    const passed: Buffer[] = []
    lines.on('data', (line: Buffer) => passed.push(line))
    input.end()
    await new Promise((resolve) => lines.on('end', resolve))
    expect(Buffer.concat(passed).toString()).toBe(many)
  })
})
