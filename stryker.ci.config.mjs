// The fast subset of mutation testing, for CI: the request checks, the argument rules, the
// responders and the Pulsar client's frame, batch and compression codecs, without the static
// mutants (module-level constants, which cost a full test run each). Fails under `break`.
import { readFileSync } from 'node:fs'

const base = JSON.parse(readFileSync(new URL('./stryker.config.json', import.meta.url), 'utf8'))

export default {
  ...base,
  mutate: [
    'bridge/core/request-checks.ts',
    'bridge/core/responders.ts',
    'shared/arguments.ts',
    'lib/pulsar-client/frame.ts',
    'lib/pulsar-client/batch.ts',
    'lib/pulsar-client/compression.ts',
  ],
  ignoreStatic: true,
  reporters: ['clear-text', 'progress'],
  thresholds: { ...base.thresholds, break: 85 },
}
