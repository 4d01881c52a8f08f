/**
 * The `default` of a key in shared/tool-service-schema.ts is what the
 * reference tells users; what the bridge does when the key is left out must
 * be that same value.
 */
import { describe, expect, it } from 'vitest'
import { readToolServices } from '../../bridge/project/tool-services.ts'
import { externalToolServiceSchema, toolServiceSchema } from '../../shared/tool-service-schema.ts'

const keys = toolServiceSchema.properties
const tool = keys.tools.items.properties
const argument = tool.arguments.items.properties

/** The one spec read from a serverless.yml whose `toolService:` says only what it must, plus `extra`. */
function specOf(extra: Record<string, unknown>) {
  const [spec] = readToolServices({
    service: 'defaults',
    provider: { name: 'aws' },
    functions: {
      fn: {
        handler: 'functions/fn.handler',
        toolService: {
          id: 'defaults',
          topic: 'defaults',
          configParams: [{ name: 'style' }],
          tools: [
            { name: 'lookup', description: 'Look up', arguments: [{ name: 'q', type: 'string', description: 'q' }] },
          ],
          ...extra,
        },
      },
    },
  })
  return spec!
}

describe("the schema's defaults", () => {
  it('are what the bridge takes for a key left out', () => {
    const spec = specOf({})
    expect(spec.response).toBe(keys.response.default)
    expect(spec.concurrency).toBe(keys.concurrency.default)
    expect(spec.invocationsPerWorker).toBe(keys.invocationsPerWorker.default)
    expect(spec.shape.event).toBe(keys.event.default)
    expect(spec.shape.answer).toBe(keys.answer.default)
    expect(spec.configParams[0]!.required).toBe(keys.configParams.items.oneOf[1].properties.required.default)
    expect(spec.tools[0]!.config).toStrictEqual(tool.config.default)
    expect(spec.tools[0]!.arguments[0]!.required).toBe(argument.required.default)
  })

  it("are what the bridge takes for an API Gateway event's route", () => {
    const route = keys.route.properties
    expect(specOf({ event: 'apigw-v2' }).shape.route).toStrictEqual({
      method: route.method.default,
      path: route.path.default,
      query: route.query.default,
      headers: route.headers.default,
    })
  })

  it('are what the bridge takes for an HTTP function elsewhere', () => {
    const [spec] = readToolServices({
      service: 'defaults',
      provider: { name: 'aws' },
      custom: {
        toolServices: {
          remote: {
            id: 'remote',
            topic: 'remote',
            url: 'http://127.0.0.1:9/fn',
            tools: [{ name: 'remote', description: 'Remote' }],
          },
        },
      },
    })
    const http = externalToolServiceSchema.properties
    expect(spec!.location).toMatchObject({
      kind: 'http',
      method: http.method.default,
      headers: http.headers.default,
      headersFromEnv: http.headersFromEnv.default,
    })
  })
})
