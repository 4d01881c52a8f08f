/**
 * The tests mutation testing runs (stryker.config.json): the fast ones that
 * need no broker, no worker thread and no child process, so every mutant is
 * judged in seconds. The full suite stays in vitest.config.ts.
 */
import { defineConfig } from 'vitest/config'

export const MUTATION_TESTS = [
  'test/protocol.test.ts',
  'test/queues.test.ts',
  'test/responders.test.ts',
  'test/event-shapes.test.ts',
  'test/handler.test.ts',
  'test/descriptors.test.ts',
  'test/errors.test.ts',
  'test/mcp.arguments.test.ts',
  'test/host-origin.test.ts',
  'test/message-bounds.test.ts',
  'test/mcp-tools.test.ts',
  'test/oauth.test.ts',
  'test/cancellations.test.ts',
  'test/arguments.test.ts',
  'test/python-json.test.ts',
  'test/request-checks.test.ts',
  'test/config-service.test.ts',
  'test/config-protocol.test.ts',
  'test/pulsar-client.test.ts',
  'test/pulsar-protocol.test.ts',
  'test/chunk-credit.test.ts',
  'test/admission.test.ts',
  'test/host-origin.test.ts',
  'test/host-origin-console.test.ts',
  'test/cors-headers.test.ts',
  'test/bearer.test.ts',
  'test/bounded-text.test.ts',
  'test/redact.test.ts',
  'test/exposure.test.ts',
  'test/stdio-lines.test.ts',
  'test/linked-list.test.ts',
  'test/worker-messages.test.ts',
  'test/worker-pool-growth.test.ts',
  'test/call-pace.test.ts',
  'test/line-claims.test.ts',
  'test/request-age.test.ts',
  'test/answered-once.test.ts',
  'test/dead-letters.test.ts',
  'test/delivery-guard.test.ts',
  'test/console-feed.test.ts',
  'test/awaited-reports.test.ts',
  'test/dev-reload.test.ts',
  'test/trace-context.test.ts',
  'test/tracing-settings.test.ts',
  'test/bounded-span-processor.test.ts',
  'test/lambda-client-context.test.ts',
  'test/idle-collection.test.ts',
]

export default defineConfig({
  test: {
    include: MUTATION_TESTS,
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
