/**
 * The `toolService:` validators are compiled ahead of time from
 * shared/tool-service-schema.ts (scripts/compile-schemas.ts): the committed
 * file must be what compiling the schemas today gives.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { GENERATED_FILE, validatorsSource } from '../../scripts/compile-schemas.ts'

describe('compiled toolService validators', () => {
  it('are up to date with the schemas (else run: node scripts/compile-schemas.ts)', () => {
    expect(readFileSync(GENERATED_FILE, 'utf8') === validatorsSource()).toBe(true)
  })
})
