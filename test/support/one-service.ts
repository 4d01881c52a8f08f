/**
 * The smallest serverless.yml with one tool service (function `f`, service
 * `svc`, one tool), read as the bridge reads it: for the tests of a setting
 * of `toolService:`, which add only the fields they are about.
 */
import { readToolServices, type ToolServiceSpec } from '../../bridge/project/tool-services.ts'

/** `f`'s service with `extra` added to (or replacing fields of) its `toolService:` block. */
export function oneService(extra: Record<string, unknown> = {}): ToolServiceSpec {
  return readToolServices({
    functions: {
      f: {
        handler: 'f.handler',
        toolService: { id: 'svc', topic: 'svc', tools: [{ name: 't', description: 'd' }], ...extra },
      },
    },
  })[0]!
}
