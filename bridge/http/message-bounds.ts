/**
 * What one MCP message may be, checked before the SDK parses it (on /mcp and
 * on stdio): one message, not a batch (every revision served here, 2025-06-18
 * on, removed batches, and one would fan a request out into many calls), and
 * nested no deeper than MAX_MESSAGE_DEPTH, walked without recursion before
 * anything recursive (the SDK's schemas) walks it. The bound is far above
 * what a tool's arguments may nest (shared/protocol.ts): arguments between
 * the two still reach the bridge's own check and its precise answer.
 */
import { ProtocolErrorCode } from '@modelcontextprotocol/server'
import { nestsDeeperThan } from '../../shared/protocol.ts'

export const MAX_MESSAGE_DEPTH = 1000

export interface MessageRefusal {
  code: number
  message: string
}

/** Why `message` (parsed JSON) is refused, or undefined when it may go on. */
export function refuseMessage(message: unknown): MessageRefusal | undefined {
  if (Array.isArray(message))
    return {
      code: ProtocolErrorCode.InvalidRequest,
      message: 'Invalid Request: JSON-RPC batches are not supported; send one message per request',
    }
  if (nestsDeeperThan(message, MAX_MESSAGE_DEPTH))
    return {
      code: ProtocolErrorCode.InvalidRequest,
      message: `Invalid Request: the message nests deeper than ${MAX_MESSAGE_DEPTH} levels`,
    }
  return undefined
}
