/**
 * JSON Schema of a function's `toolService:` block in serverless.yml. The
 * bridge validates with it, and the Serverless Framework plugin
 * (serverless-plugin/tool-service.ts) declares this same object so `sls`
 * validates it too.
 *
 * osls compiles plugin schemas with Ajv in strict mode and without
 * `allowUnionTypes`: no `type: [...]` here (use `anyOf`), or every `sls`
 * command fails with SCHEMA_FAILS_STRICT_MODE. The bridge compiles it with the
 * same strictness, so the unit tests catch that first.
 */
export const ARGUMENT_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array'] as const
export type ArgumentType = (typeof ARGUMENT_TYPES)[number]

export const RESPONSE_MODES = ['single', 'stream'] as const
export type ResponseMode = (typeof RESPONSE_MODES)[number]

const NAME = { type: 'string', minLength: 1, pattern: '^[A-Za-z0-9._-]+$' } as const

export const toolServiceSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'tools'],
  properties: {
    id: NAME,
    topic: NAME,
    requestQueue: { type: 'string', minLength: 1 },
    responseQueue: { type: 'string', minLength: 1 },
    configParams: {
      type: 'array',
      items: {
        oneOf: [
          NAME,
          {
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            properties: { name: NAME, required: { type: 'boolean' } },
          },
        ],
      },
    },
    response: { enum: RESPONSE_MODES },
    concurrency: { type: 'integer', minimum: 1, maximum: 1024 },
    timeout: { type: 'number', exclusiveMinimum: 0, maximum: 900 },
    tools: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'description'],
        properties: {
          name: NAME,
          description: { type: 'string', minLength: 1 },
          config: {
            type: 'object',
            additionalProperties: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
          },
          arguments: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['name', 'type', 'description'],
              properties: {
                name: NAME,
                type: { enum: ARGUMENT_TYPES },
                description: { type: 'string' },
                required: { type: 'boolean' },
              },
            },
          },
        },
      },
    },
  },
} as const
