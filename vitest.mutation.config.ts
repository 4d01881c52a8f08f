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
  'test/arguments.test.ts',
  'test/python-json.test.ts',
  'test/request-checks.test.ts',
  'test/config-service.test.ts',
  'test/config-protocol.test.ts',
  'test/pulsar-client.test.ts',
  'test/pulsar-protocol.test.ts',
  'test/trace-context.test.ts',
  'test/tracing-settings.test.ts',
  'test/bounded-span-processor.test.ts',
  'test/lambda-client-context.test.ts',
]

export default defineConfig({
  test: {
    include: MUTATION_TESTS,
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
})
