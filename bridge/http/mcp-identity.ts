/**
 * What /mcp says it is: the server's name and version, and the protocol
 * revisions it serves. Read by the SDK's servers and by the direct lane
 * for tool calls (mcp-direct-calls.ts), which answers without them.
 */
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server'
import { PACKAGE_VERSION } from '../support/package-root.ts'

export const SERVER_INFO = { name: 'toolbridge', version: PACKAGE_VERSION }

/** The stateless revision, in which every request names its revision. */
export const MODERN_REVISION = '2026-07-28'

/** Every revision /mcp serves: 2026-07-28, and the 2025-era ones the SDK's legacy path takes. */
export const SERVED_VERSIONS = [MODERN_REVISION, ...SUPPORTED_PROTOCOL_VERSIONS]
