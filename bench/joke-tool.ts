/**
 * The one tool the benches call, so that every bench measures the same call:
 * serverless.yml's joke-service and its tell-joke tool, by these names.
 */
import { resolve } from 'node:path'
import { lambdaContext } from '../bridge/invokers/run-handler.ts'
import { loadProject } from '../bridge/project/project.ts'
import { handler } from '../functions/joke/handler.ts'
import { decodeRequest, encodeRequest, resultText } from '../shared/protocol.ts'
import { ROOT } from './project-root.ts'

export const SERVICE_ID = 'joke-service'
export const TOOL_NAME = 'tell-joke'
export const ARGUMENTS = { topic: 'programming' }

/** serverless.yml's joke-service and its tell-joke tool, the request the benches send, and the event the bridge hands the function for it. */
export function loadJokeTool() {
  const project = loadProject(resolve(ROOT, 'serverless.yml'))
  const spec = project.services.find((s) => s.id === SERVICE_ID)
  const tool = spec?.tools.find((t) => t.name === TOOL_NAME)
  if (!spec || !tool) throw new Error(`serverless.yml has no ${SERVICE_ID} / ${TOOL_NAME}`)
  const request = { config: tool.config, arguments: ARGUMENTS }
  const decoded = decodeRequest(encodeRequest(request))
  if (!decoded.ok) throw new Error(decoded.message)
  return { project, spec, tool, request, event: decoded.value }
}

/** What the bridge answers for the benches' request: the joke function's own result text, called directly. */
export async function jokeAnswer(): Promise<string> {
  const { spec, event } = loadJokeTool()
  return resultText(await handler(event, lambdaContext(spec.functionName, 'bench', spec.timeoutMs)))
}
