/**
 * The lines of `toolbridge mcp`'s stdin, checked before the MCP SDK reads
 * them: the SDK drops a line that is not JSON without a word, and closes
 * the connection on one longer than its buffer. Here such a line gets a
 * JSON-RPC error (-32700 parse error, -32600 for what is JSON but not one
 * JSON-RPC message, a batch, or nested too deep: message-bounds.ts) and the
 * session goes on; good lines pass unchanged.
 */
import { Readable } from 'node:stream'
import { parseJSONRPCMessage, ProtocolErrorCode, STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/server'
import { refuseMessage } from './message-bounds.ts'

/** A line the SDK's buffer can hold with its newline. */
export const MAX_LINE_BYTES = STDIO_DEFAULT_MAX_BUFFER_SIZE - 1

export interface LineError {
  code: number
  message: string
}

const NEWLINE = 0x0a

function check(line: Buffer): LineError | undefined {
  let message: unknown
  try {
    message = JSON.parse(line.toString('utf8'))
  } catch {
    return { code: ProtocolErrorCode.ParseError, message: 'Parse error: the line is not JSON' }
  }
  const refusal = refuseMessage(message)
  if (refusal) return refusal
  try {
    parseJSONRPCMessage(message)
  } catch {
    return { code: ProtocolErrorCode.InvalidRequest, message: 'Invalid Request: not a JSON-RPC message' }
  }
  return undefined
}

/** The good lines of `input`, each with its newline; `onRefused` is told about each other one. */
export function jsonRpcLines(input: Readable, onRefused: (error: LineError) => void): Readable {
  let pending: Buffer[] = []
  let pendingBytes = 0
  let skipping = false // inside a line already refused as too long

  const lines = new Readable({ read: () => void input.resume() })
  const take = (line: Buffer) => {
    if (line.toString('latin1').trim() === '') return
    const error = check(line)
    if (error) return onRefused(error)
    if (!lines.push(Buffer.concat([line, Buffer.of(NEWLINE)]))) input.pause()
  }

  input.on('data', (data: Buffer) => {
    let start = 0
    for (let end = data.indexOf(NEWLINE); end >= 0; end = data.indexOf(NEWLINE, start)) {
      const part = data.subarray(start, end)
      start = end + 1
      if (skipping) {
        skipping = false
        continue
      }
      const line = pending.length === 0 ? part : Buffer.concat([...pending, part])
      pending = []
      pendingBytes = 0
      if (line.length > MAX_LINE_BYTES)
        onRefused({ code: ProtocolErrorCode.ParseError, message: `Parse error: line over ${MAX_LINE_BYTES} bytes` })
      else take(line)
    }
    if (skipping || start === data.length) return
    pending.push(data.subarray(start))
    pendingBytes += data.length - start
    if (pendingBytes > MAX_LINE_BYTES) {
      // Refused now: holding the rest of a line this long would only fill memory.
      onRefused({ code: ProtocolErrorCode.ParseError, message: `Parse error: line over ${MAX_LINE_BYTES} bytes` })
      pending = []
      pendingBytes = 0
      skipping = true
    }
  })
  input.once('end', () => lines.push(null))
  input.once('error', (err) => lines.destroy(err))
  return lines
}
