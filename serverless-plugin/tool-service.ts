/**
 * A Serverless Framework plugin (osls, Serverless Framework 3 and 4) that
 * declares the `toolService:` function property, so `sls` validates it with
 * `configValidationMode: error` instead of refusing it as an unknown
 * property, or validation being off. From the package it is
 * `plugins: [toolbridge/serverless]`; this clone lists the .ts file itself.
 *
 * The schema is shared/tool-service-schema.ts itself, the one the bridge
 * validates with: one source (without the annotations of this project's own,
 * which osls's strict Ajv would refuse as unknown keywords). osls loads plugins with require(); on Node 24
 * that loads ES modules (require(esm), so no top-level await in what this
 * imports), and strips the types of .ts files outside node_modules, so in
 * the clone this plugin needs no build step.
 *
 * osls validates with Ajv's `coerceTypes: 'array'`, so `sls` lets through a
 * few things the bridge refuses (`required: "true"`, `style: [pun]`); the
 * bridge stays the strict check. `sls` catches unknown fields, missing ones,
 * bad names and enums.
 */
import { schemaWithoutProjectKeywords, toolServiceSchema } from '../shared/tool-service-schema.ts'

/** The part of the framework's `serverless` object this plugin uses (osls ships no plugin types). */
export interface Serverless {
  version?: string
  configSchemaHandler?: {
    defineFunctionProperties?(provider: string, schema: { properties: Record<string, unknown> }): void
  }
  /** The framework's own error class: it shows its message as a user error, without a stack trace. */
  classes?: { Error?: new (message: string) => Error }
}

export default class ToolServicePlugin {
  constructor(serverless: Serverless) {
    const schemas = serverless.configSchemaHandler
    if (typeof schemas?.defineFunctionProperties !== 'function') {
      // Serverless Framework 1 and early 2 have no schema API to declare `toolService:` with.
      const UserError = serverless.classes?.Error ?? Error
      throw new UserError(
        `toolbridge/serverless: Serverless Framework ${serverless.version ?? '(unknown version)'} cannot declare function properties; ` +
          'use osls 4 (npm install --save-dev osls) or the Serverless Framework 3 or 4',
      )
    }
    schemas.defineFunctionProperties('aws', {
      properties: { toolService: schemaWithoutProjectKeywords(toolServiceSchema) },
    })
  }
}
