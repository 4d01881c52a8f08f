/**
 * `toolbridge check`: can each tool service's function be called? Without
 * calling any: Lambda functions (someone else's, and with `--invoker lambda`
 * those of serverless.yml) are looked up with GetFunction; handlers are
 * looked for on disk; HTTP functions have their configuration checked,
 * since only a call would tell more and a call could run the function.
 */
import type { Project } from '../project/project.ts'
import type { Settings } from '../project/settings.ts'
import { functionState, lambdaClient, type LambdaAccess } from '../invokers/lambda/lambda-functions.ts'
import { resolveHandler } from '../invokers/run-handler.ts'
import { HttpInvoker } from '../invokers/http-function/http-function-invoker.ts'
import { messageOf } from '../../shared/errors.ts'

export interface CheckResult {
  service: string
  /** The function as it is called: a Lambda name or ARN, a URL, a handler. */
  target: string
  ok: boolean
  detail: string
}

export async function checkFunctions(project: Project, settings: Settings): Promise<CheckResult[]> {
  const clients = new Map<string, ReturnType<typeof lambdaClient>>()
  const clientFor = (access: LambdaAccess) => {
    const key = `${access.region ?? ''} ${access.role ?? ''}`
    let client = clients.get(key)
    if (!client) clients.set(key, (client = lambdaClient(settings.lambda, access)))
    return client
  }
  const http = new HttpInvoker({ env: settings.env })
  const lookUp = async (service: string, access: LambdaAccess, lambdaName: string): Promise<CheckResult> => {
    const state = await functionState(clientFor(access), lambdaName)
    return { service, target: lambdaName, ok: state.ok, detail: state.detail }
  }
  try {
    return await Promise.all(
      project.services.map(async (spec): Promise<CheckResult> => {
        const { location } = spec
        switch (location.kind) {
          case 'http': {
            const problem = await http.prepare({ ...spec, location })
            return {
              service: spec.id,
              target: `${location.method} ${location.url}`,
              ok: !problem,
              detail: problem ?? 'configured (HTTP functions are not called to check them)',
            }
          }
          case 'lambda':
            return lookUp(spec.id, location, location.lambdaName)
          case 'handler':
            if (settings.invoker === 'lambda')
              return lookUp(spec.id, { region: undefined, role: undefined }, location.lambdaName)
            try {
              const { file } = resolveHandler(project.baseDir, location.handler)
              return { service: spec.id, target: location.handler, ok: true, detail: `found ${file}` }
            } catch (err) {
              return { service: spec.id, target: location.handler, ok: false, detail: messageOf(err) }
            }
        }
      }),
    )
  } finally {
    for (const client of clients.values()) client.destroy()
    await http.close()
  }
}
