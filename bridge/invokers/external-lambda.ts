/**
 * Someone else's Lambda functions (`custom.toolServices.<key>.function`):
 * called like any Lambda function, each with its own region and role, and
 * looked up with GetFunction when the bridge starts, so a wrong name or a
 * failed function is reported then rather than on the first request.
 */
import type { LambdaClient } from '@aws-sdk/client-lambda'
import type { ToolServiceSpec } from '../project/tool-services.ts'
import type { LambdaSettings } from '../project/settings.ts'
import { credentialsFor, functionState, lambdaClient, type LambdaAccess } from './lambda-functions.ts'
import { silentLogger, type Logger } from '../support/logger.ts'
import type { FunctionTarget, Invocation, Invoker, Outcome } from './invoker.ts'
import { LambdaInvoker } from './lambda.ts'

interface Account {
  invoker: LambdaInvoker
  client: LambdaClient
}

export class ExternalLambdaInvoker implements Invoker {
  /** One invoker and one lookup client per region and role. */
  private readonly accounts = new Map<string, Account>()
  private readonly byFunction = new Map<string, Account>()

  constructor(services: ToolServiceSpec[], settings: LambdaSettings, logger: Logger = silentLogger) {
    for (const spec of services) {
      if (!spec.external) continue
      const access: LambdaAccess = spec.external
      const key = `${access.region ?? ''} ${access.role ?? ''}`
      let account = this.accounts.get(key)
      if (!account) {
        const region = access.region ?? settings.region
        account = {
          invoker: new LambdaInvoker({ ...settings, region, credentials: credentialsFor(settings, access), logger }),
          client: lambdaClient(settings, access),
        }
        this.accounts.set(key, account)
      }
      this.byFunction.set(spec.functionName, account)
    }
  }

  async prepare(target: FunctionTarget): Promise<string | undefined> {
    const account = this.byFunction.get(target.functionName)
    if (!account) return `"${target.functionName}" names no Lambda "function:"`
    const problem = await account.invoker.prepare(target)
    if (problem) return problem
    const state = await functionState(account.client, target.lambdaName)
    return state.ok ? undefined : `Lambda function "${target.lambdaName}" is ${state.detail}`
  }

  invoke(invocation: Invocation): Promise<Outcome> {
    const account = this.byFunction.get(invocation.target.functionName)
    if (!account) return Promise.resolve({ ok: false, kind: 'unavailable', message: `"${invocation.target.functionName}" names no Lambda "function:"` })
    return account.invoker.invoke(invocation)
  }

  async close(): Promise<void> {
    await Promise.all([...this.accounts.values()].map(async ({ invoker, client }) => {
      await invoker.close()
      client.destroy()
    }))
  }
}
