/**
 * A local Serverless Framework (osls) plugin that declares the `toolService:`
 * function property, so `sls` validates it with `configValidationMode: error`
 * instead of refusing it as an unknown property, or validation being off.
 *
 * The schema is shared/tool-service-schema.ts itself, the one the bridge
 * validates with: one source. osls loads local plugins with require(); on
 * Node 24 that loads ES modules (require(esm), so no top-level await in what
 * this imports) and strips the types of .ts files outside node_modules, so
 * this plugin needs no build step.
 *
 * osls validates with Ajv's `coerceTypes: 'array'`, so `sls` lets through a
 * few things the bridge refuses (`required: "true"`, `style: [pun]`); the
 * bridge stays the strict check. `sls` catches unknown fields, missing ones,
 * bad names and enums.
 */
import { toolServiceSchema } from '../shared/tool-service-schema.ts'

/** The part of osls's `serverless` object this plugin uses (osls ships no plugin types). */
export interface Serverless {
  configSchemaHandler: {
    defineFunctionProperties(provider: string, schema: { properties: Record<string, unknown> }): void
  }
}

export default class ToolServicePlugin {
  constructor(serverless: Serverless) {
    serverless.configSchemaHandler.defineFunctionProperties('aws', {
      properties: { toolService: toolServiceSchema },
    })
  }
}
