/**
 * The tests mutation testing runs (stryker.config.json): the fast ones that
 * need no broker, no worker thread and no child process, so every mutant is
 * judged in seconds. The full suite stays in vitest.config.ts.
 */
import { defineConfig } from 'vitest/config'

export const MUTATION_TESTS = [
  'test/shared/protocol.test.ts',
  'test/shared/queues.test.ts',
  'test/core/responders.test.ts',
  'test/core/event-shapes.test.ts',
  'test/shared/handler.test.ts',
  'test/project/descriptors.test.ts',
  'test/shared/errors.test.ts',
  'test/http/mcp.arguments.test.ts',
  'test/http/host-origin.test.ts',
  'test/http/message-bounds.test.ts',
  'test/http/mcp-tools.test.ts',
  'test/http/oauth.test.ts',
  'test/bridge-support/cancellations.test.ts',
  'test/shared/arguments.test.ts',
  'test/shared/python-json.test.ts',
  'test/core/request-checks.test.ts',
  'test/trustgraph/config-service.test.ts',
  'test/shared/config-protocol.test.ts',
  'test/lib/pulsar-client.test.ts',
  'test/transports/pulsar-protocol.test.ts',
  'test/invokers/chunk-credit.test.ts',
  'test/http/admission.test.ts',
  'test/http/host-origin.test.ts',
  'test/http/host-origin-console.test.ts',
  'test/http/cors-headers.test.ts',
  'test/http/bearer.test.ts',
  'test/bridge-support/bounded-text.test.ts',
  'test/transports/redact.test.ts',
  'test/http/exposure.test.ts',
  'test/http/stdio-lines.test.ts',
  'test/bridge-support/linked-list.test.ts',
  'test/invokers/worker-messages.test.ts',
  'test/invokers/worker-pool-growth.test.ts',
  'test/invokers/call-pace.test.ts',
  'test/invokers/line-claims.test.ts',
  'test/core/request-age.test.ts',
  'test/stores/answered-once.test.ts',
  'test/stores/memory-answered-store.test.ts',
  'test/core/dead-letters.test.ts',
  'test/core/delivery-guard.test.ts',
  'test/http/console-feed.test.ts',
  'test/http/awaited-reports.test.ts',
  'test/dev/dev-reload.test.ts',
  'test/tracing/trace-context.test.ts',
  'test/tracing/tracing-settings.test.ts',
  'test/tracing/bounded-span-processor.test.ts',
  'test/invokers/lambda-client-context.test.ts',
  'test/bridge-support/idle-collection.test.ts',
  // shared/tool-service-schema.ts: its annotations are the reference pages; its defaults, the bridge's.
  'test/repo/reference.test.ts',
  'test/project/schema-defaults.test.ts',
]

export default defineConfig({
  test: {
    include: MUTATION_TESTS,
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
