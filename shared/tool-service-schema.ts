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

/**
 * `concerns`: the broker or invoker a key is for, when it is not every one.
 * An annotation of this project's (the generated reference shows it); ajv
 * must be told of it, and the Serverless plugin declares the schema without
 * it (schemaWithoutProjectKeywords), as osls knows no such keyword.
 */
export const PROJECT_KEYWORDS = ['concerns'] as const

/** The HTTP request an API Gateway event carries, built from the arguments. */
const ROUTE = {
  type: 'object',
  additionalProperties: false,
  description: 'For `event: apigw-v1` or `apigw-v2`: the HTTP request the API Gateway event describes.',
  examples: [{ method: 'GET', path: '/items/{id}', query: ['fields'] }],
  properties: {
    method: { enum: HTTP_METHODS, default: 'POST', description: 'The HTTP method.', examples: ['GET'] },
    path: {
      type: 'string',
      pattern: '^/',
      default: '/',
      description: 'The path; each `{name}` in it is that argument, URL-encoded.',
      examples: ['/items/{id}'],
    },
    query: {
      type: 'array',
      items: NAME,
      default: [],
      description: 'Arguments sent in the query string; the rest go in a JSON body (none for GET and DELETE).',
      examples: [['fields', 'limit']],
    },
    headers: {
      ...STRING_MAP,
      default: {},
      description: 'Fixed headers of the request.',
      examples: [{ 'x-api-version': '2' }],
    },
  },
} as const

export const toolServiceSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'tools'],
  properties: {
    id: {
      ...NAME,
      description: "The tool service's id: the key of its `tool-service` descriptor in TrustGraph.",
      examples: ['greet-service'],
    },
    topic: {
      ...NAME,
      description:
        'Names both queues: `request:tg:<topic>` and `response:tg:<topic>`. Give either `topic` or `requestQueue` and `responseQueue`.',
      examples: ['greet'],
    },
    requestQueue: {
      type: 'string',
      minLength: 1,
      description: 'The queue requests arrive on, as TrustGraph names it (instead of `topic`).',
      examples: ['non-persistent://tg/request/greet'],
    },
    responseQueue: {
      type: 'string',
      minLength: 1,
      description: 'The queue answers go to, as TrustGraph names it (instead of `topic`).',
      examples: ['non-persistent://tg/response/greet'],
    },
    configParams: {
      type: 'array',
      default: [],
      description:
        "The config values the service's tools send (each tool's `config`): a name, or a name and whether every tool must give it.",
      examples: [[{ name: 'style', required: false }]],
      items: {
        oneOf: [
          NAME,
          {
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            properties: {
              name: { ...NAME, description: 'The config param.', examples: ['style'] },
              required: {
                type: 'boolean',
                default: false,
                description: 'Every tool of the service must give it in its `config`.',
                examples: [true],
              },
            },
          },
        ],
      },
    },
    response: {
      enum: RESPONSE_MODES,
      default: 'single',
      description:
        "`single`: the whole answer in one message (TrustGraph's non-streaming client reads only the first); `stream`: a message per chunk, then a final one.",
      examples: ['stream'],
    },
    event: {
      enum: EVENT_SHAPES,
      default: 'envelope',
      description:
        'What the function receives: `{user, config, arguments}`, the arguments alone, an API Gateway proxy event built by `route`, or `template` filled in.',
      examples: ['apigw-v2'],
    },
    route: ROUTE,
    template: {
      description:
        'For `event: template`: any JSON, with `{{arguments.x}}`, `{{config.y}}`, `{{user}}` and `{{arguments}}` placeholders.',
      examples: [{ q: '{{arguments.city}}', units: '{{config.units}}' }],
    },
    answer: {
      enum: ANSWER_FORMATS,
      default: 'text',
      description: 'How a successful body becomes the answer: as it is, or parsed and pretty-printed JSON.',
      examples: ['json'],
    },
    concurrency: {
      type: 'integer',
      minimum: 1,
      maximum: 1024,
      default: 8,
      description: 'Invocations of the function at once.',
      examples: [16],
    },
    invocationsPerWorker: {
      type: 'integer',
      minimum: 1,
      maximum: 1024,
      default: 1,
      description:
        "Invocations one worker thread runs at once; 1 is Lambda's one at a time. Only for a function of this serverless.yml.",
      examples: [64],
      concerns: 'the `worker-threads` invoker (worker threads)',
    },
    timeout: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: 900,
      description: "Seconds an invocation may take. Default: the function's `timeout`, else 30.",
      examples: [10],
    },
    maxAge: {
      type: 'number',
      minimum: 0,
      maximum: 86_400,
      description:
        'Seconds a request may have waited and still be invoked; older ones are answered `expired`. 0: any age. Default: `start --max-age`.',
      examples: [120],
    },
    idempotent: {
      type: 'boolean',
      default: false,
      description: 'The function can safely run twice for one request: no answered-once memory for it.',
      examples: [true],
    },
    answeredMemory: {
      type: 'object',
      additionalProperties: false,
      description: 'The answered-once memory, so that a redelivered request is answered again without invoking.',
      examples: [{ size: 5000, ttl: 300 }],
      properties: {
        size: {
          type: 'integer',
          minimum: 0,
          maximum: 1_000_000,
          description: 'How many answers it keeps; 0: none. Default: `start --answered-memory-size`.',
          examples: [5000],
        },
        ttl: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 86_400,
          description: 'Seconds an answer is kept. Default: `start --answered-memory-ttl`.',
          examples: [300],
        },
      },
    },
    answeredStore: {
      type: 'object',
      additionalProperties: false,
      description:
        'The shared answered-once store (`start --answered-store`): what to do when it cannot say whether a request was answered.',
      examples: [{ whenDown: 'refuse' }],
      properties: {
        whenDown: {
          enum: ['run', 'refuse'],
          default: 'run',
          description:
            'When the store is unreachable, slow or full: `run` the request anyway (it may run twice), or `refuse` it with an `unavailable` error answer.',
          examples: ['refuse'],
        },
      },
    },
    deadLetters: {
      type: 'object',
      additionalProperties: false,
      description:
        'Where requests that cannot be answered go (a persistent queue), and which error answers are kept there too.',
      examples: [{ queue: 'flow:tg:booking-dead-letters', kinds: ['crash', 'timeout'] }],
      properties: {
        queue: {
          type: 'string',
          minLength: 1,
          description:
            'A persistent queue on the same broker. Default: `start --dead-letter-queue`, else none (such requests are logged and dropped).',
          examples: ['flow:tg:booking-dead-letters'],
        },
        kinds: {
          type: 'array',
          items: { enum: DEAD_LETTER_KINDS },
          default: [],
          description: 'Also keep a copy of the requests answered with these errors.',
          examples: [['crash', 'timeout']],
        },
      },
    },
    tools: {
      type: 'array',
      minItems: 1,
      description: 'The tools the service offers; each becomes a TrustGraph `tool` descriptor and an MCP tool.',
      examples: [[{ name: 'greet', description: 'Say hello to someone' }]],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'description'],
        properties: {
          name: { ...NAME, description: 'The name models and agents call the tool by.', examples: ['greet'] },
          title: {
            type: 'string',
            minLength: 1,
            description: 'A name for people (MCP clients show it); `name` stays the one models call.',
            examples: ['Order lookup'],
          },
          description: {
            type: 'string',
            minLength: 1,
            description: 'What the tool does, for the model that chooses it.',
            examples: ['Say hello to someone'],
          },
          annotations: {
            type: 'object',
            additionalProperties: false,
            description: "MCP's behaviour hints; each one left out takes its cautious default.",
            examples: [{ readOnlyHint: true, openWorldHint: false }],
            properties: {
              readOnlyHint: {
                type: 'boolean',
                default: false,
                description: 'The tool changes nothing.',
                examples: [true],
              },
              destructiveHint: {
                type: 'boolean',
                description: 'The tool may destroy or overwrite. Default: true, false for a read-only tool.',
                examples: [false],
              },
              idempotentHint: {
                type: 'boolean',
                description:
                  'Calling it again with the same arguments does nothing more. Default: false, true for a read-only tool.',
                examples: [true],
              },
              openWorldHint: {
                type: 'boolean',
                default: true,
                description: 'The tool reaches things outside the bridge (the web, other systems).',
                examples: [false],
              },
            },
          },
          longRunning: {
            type: 'boolean',
            default: false,
            description:
              'A call of an MCP client that declares the Tasks extension becomes a task at once, answered by tasks/get, instead of after --mcp-task-after.',
            examples: [true],
          },
          output: {
            type: 'object',
            description:
              "A JSON Schema (2020-12) of the answer, which must then be JSON: MCP's `outputSchema` and `structuredContent`.",
            examples: [{ type: 'object', properties: { status: { type: 'string' } }, required: ['status'] }],
          },
          inputSchema: {
            type: 'object',
            description:
              "The arguments as a JSON Schema (2020-12) of an object, instead of `arguments:`: requests are checked against it, MCP lists it as it is, and TrustGraph's descriptors get its top-level properties.",
            examples: [
              {
                type: 'object',
                properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
                required: ['city'],
                additionalProperties: false,
              },
            ],
          },
          config: {
            type: 'object',
            additionalProperties: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
            default: {},
            description: 'The config values this tool sends, one per config param of the service.',
            examples: [{ style: 'friendly' }],
          },
          arguments: {
            type: 'array',
            default: [],
            description:
              "The tool's arguments, as TrustGraph's descriptor lists them; the bridge checks and converts them.",
            examples: [[{ name: 'name', type: 'string', description: 'Who to greet', required: true }]],
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['name', 'type', 'description'],
              properties: {
                name: { ...NAME, description: 'The argument.', examples: ['city'] },
                type: {
                  enum: ARGUMENT_TYPES,
                  description: 'Its JSON type; a string value the caller gives is converted to it.',
                  examples: ['integer'],
                },
                description: {
                  type: 'string',
                  description: 'What it is, for the model that fills it in.',
                  examples: ['The city'],
                },
                required: {
                  type: 'boolean',
                  default: false,
                  description: "The bridge refuses a call without it (not part of TrustGraph's descriptor).",
                  examples: [true],
                },
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
    function: {
      type: 'string',
      minLength: 1,
      description: 'The Lambda function to call, by name or ARN. Either `function` or `url`.',
      examples: ['arn:aws:lambda:eu-west-1:123456789012:function:orders-lookup'],
      concerns: 'a Lambda function elsewhere (called with the AWS SDK)',
    },
    region: {
      type: 'string',
      pattern: '^[a-z]{2}(-[a-z]+)+-\\d+$',
      description: "The function's region. Default: the ARN's, else the bridge's AWS region.",
      examples: ['eu-west-1'],
      concerns: 'a Lambda function elsewhere (called with the AWS SDK)',
    },
    role: {
      type: 'string',
      pattern: '^arn:aws[a-z-]*:iam::\\d{12}:role/',
      description: 'An IAM role to assume (through the standard credential chain) for calling `function`.',
      examples: ['arn:aws:iam::123456789012:role/toolbridge-caller'],
      concerns: 'a Lambda function elsewhere (called with the AWS SDK)',
    },
    url: {
      type: 'string',
      pattern: '^https?://',
      description: 'The HTTP function to call: the event is its request body. Either `function` or `url`.',
      examples: ['https://weather.example.com/function/weather'],
      concerns: 'an HTTP function',
    },
    method: {
      enum: HTTP_METHODS,
      default: 'POST',
      description: 'The HTTP method `url` is called with.',
      examples: ['PUT'],
      concerns: 'an HTTP function',
    },
    headers: {
      ...STRING_MAP,
      default: {},
      description: 'Fixed, non-secret headers sent to `url`.',
      examples: [{ 'x-api-version': '2' }],
      concerns: 'an HTTP function',
    },
    headersFromEnv: {
      type: 'object',
      additionalProperties: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
      default: {},
      description:
        "Header name -> the environment variable (the bridge's) holding its value: secrets stay out of serverless.yml.",
      examples: [{ authorization: 'WEATHER_API_AUTH' }],
      concerns: 'an HTTP function',
    },
  },
} as const

type Schema = { readonly [keyword: string]: unknown }

/** Keywords whose values are data, not schemas: nothing in them is a keyword. */
const DATA_KEYWORDS = new Set(['default', 'examples', 'enum', 'const', 'required'])

/** `schema` without this project's own keywords, for validators that know only the standard ones (osls). */
export function schemaWithoutProjectKeywords(schema: Schema): Schema {
  const strip = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(strip)
      : typeof value === 'object' && value !== null
        ? Object.fromEntries(
            Object.entries(value)
              .filter(([key, inner]) => !(PROJECT_KEYWORDS.includes(key as 'concerns') && typeof inner === 'string'))
              .map(([key, inner]) => [key, DATA_KEYWORDS.has(key) ? inner : strip(inner)]),
          )
        : value
  return strip(schema) as Schema
}
