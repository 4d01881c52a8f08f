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
import { ERROR_KINDS } from './errors.ts'

export const ARGUMENT_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array'] as const
export type ArgumentType = (typeof ARGUMENT_TYPES)[number]

export const RESPONSE_MODES = ['single', 'stream'] as const
export type ResponseMode = (typeof RESPONSE_MODES)[number]

/** What the function receives (bridge/core/event-shapes.ts): the request's envelope unless a service says otherwise. */
export const EVENT_SHAPES = ['envelope', 'arguments', 'apigw-v1', 'apigw-v2', 'template'] as const
export type EventShape = (typeof EVENT_SHAPES)[number]

/** How a successful body becomes the answer: as it is, or parsed and pretty-printed JSON. */
export const ANSWER_FORMATS = ['text', 'json'] as const
export type AnswerFormat = (typeof ANSWER_FORMATS)[number]

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
export type HttpMethod = (typeof HTTP_METHODS)[number]

/** `{{arguments.city}}`, `{{config.units}}`, `{{user}}`, `{{arguments}}` in an `event: template`. */
export const TEMPLATE_PLACEHOLDER = /\{\{\s*([^{}\s]+)\s*\}\}/g
/** A placeholder's path: `user`, or `config`/`arguments` and optionally a dotted path into it. */
export const TEMPLATE_PATH = /^(user|config|arguments)((?:\.[^.]+)*)$/

/** Error kinds a service may choose to keep in its dead-letter queue besides the requests it cannot answer (`config` never reaches the wire). */
export const DEAD_LETTER_KINDS = ERROR_KINDS.filter((kind) => kind !== 'config')

const NAME = { type: 'string', minLength: 1, pattern: '^[A-Za-z0-9._-]+$' } as const
const STRING_MAP = { type: 'object', additionalProperties: { type: 'string' } } as const

/** The HTTP request an API Gateway event carries, built from the arguments. */
const ROUTE = {
  type: 'object',
  additionalProperties: false,
  properties: {
    method: { enum: HTTP_METHODS },
    /** `/items/{id}`: each `{name}` is that argument, URL-encoded. */
    path: { type: 'string', pattern: '^/' },
    /** Arguments sent in the query string; the rest go in a JSON body (none for GET and DELETE). */
    query: { type: 'array', items: NAME },
    headers: STRING_MAP,
  },
} as const

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
    event: { enum: EVENT_SHAPES },
    route: ROUTE,
    /** For `event: template`: any JSON, with `{{arguments.x}}`, `{{config.y}}` and `{{user}}` placeholders. */
    template: {},
    answer: { enum: ANSWER_FORMATS },
    concurrency: { type: 'integer', minimum: 1, maximum: 1024 },
    /** Invocations one worker thread runs at once (`local` invoker); 1 (default) is Lambda's one at a time. */
    invocationsPerWorker: { type: 'integer', minimum: 1, maximum: 1024 },
    timeout: { type: 'number', exclusiveMinimum: 0, maximum: 900 },
    /** Seconds a request may have waited and still be invoked (0: any age); default the bridge's --max-age. */
    maxAge: { type: 'number', minimum: 0, maximum: 86_400 },
    /** The function can safely run twice for one request: no answered-once memory for it. */
    idempotent: { type: 'boolean' },
    /** The answered-once memory: how many answers, for how many seconds; defaults --answered-memory-size, --answered-memory-ttl. */
    answeredMemory: {
      type: 'object',
      additionalProperties: false,
      properties: {
        size: { type: 'integer', minimum: 0, maximum: 1_000_000 },
        ttl: { type: 'number', exclusiveMinimum: 0, maximum: 86_400 },
      },
    },
    /** Where requests that cannot be answered go (a persistent queue), and which error answers are kept there too. */
    deadLetters: {
      type: 'object',
      additionalProperties: false,
      properties: {
        queue: { type: 'string', minLength: 1 },
        kinds: { type: 'array', items: { enum: DEAD_LETTER_KINDS } },
      },
    },
    tools: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'description'],
        properties: {
          name: NAME,
          /** A name for people (MCP clients show it); `name` stays the one models and agents call. */
          title: { type: 'string', minLength: 1 },
          description: { type: 'string', minLength: 1 },
          /** MCP's behaviour hints; each one left out takes its cautious default (bridge/http/mcp-tools.ts). */
          annotations: {
            type: 'object',
            additionalProperties: false,
            properties: {
              readOnlyHint: { type: 'boolean' },
              destructiveHint: { type: 'boolean' },
              idempotentHint: { type: 'boolean' },
              openWorldHint: { type: 'boolean' },
            },
          },
          /** A JSON Schema (2020-12) of the answer, which is then JSON: MCP's outputSchema and structuredContent. */
          output: { type: 'object' },
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

/**
 * A tool service for a function this serverless.yml does not define, under
 * `custom.toolServices.<key>`: a Lambda function by name or ARN (someone
 * else's), or an HTTP endpoint on any platform. Exactly one of `function`
 * and `url`; the bridge checks that, and that the fields fit the kind.
 */
export const externalToolServiceSchema = {
  ...toolServiceSchema,
  properties: {
    ...toolServiceSchema.properties,
    function: { type: 'string', minLength: 1 },
    region: { type: 'string', pattern: '^[a-z]{2}(-[a-z]+)+-\\d+$' },
    /** An IAM role to assume (through the standard credential chain) for calling `function`. */
    role: { type: 'string', pattern: '^arn:aws[a-z-]*:iam::\\d{12}:role/' },
    url: { type: 'string', pattern: '^https?://' },
    method: { enum: HTTP_METHODS },
    /** Fixed, non-secret headers. */
    headers: STRING_MAP,
    /** Header name -> the environment variable holding its value: secrets stay out of serverless.yml. */
    headersFromEnv: { type: 'object', additionalProperties: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' } },
  },
} as const
