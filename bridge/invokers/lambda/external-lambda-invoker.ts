/**
 * Someone else's Lambda functions (`custom.toolServices.<key>.function`):
 * called like any Lambda function, each with its own region and role, and
 * looked up with GetFunction when the bridge starts, so a wrong name or a
 * failed function is reported then rather than on the first request.
 */
import type { LambdaClient } from '@aws-sdk/client-lambda'
import type { LambdaLocation } from '../../project/tool-services.ts'
import type { LambdaSettings } from '../../project/settings.ts'
import { credentialsFor, functionState, lambdaClient } from './lambda-functions.ts'
import { silentLogger, type Logger } from '../../support/logger.ts'
import type { FunctionTarget, Invocation, Invoker, Outcome } from '../invoker.ts'
import { LambdaInvoker } from './lambda-invoker.ts'

interface Account {
  invoker: LambdaInvoker
  client: LambdaClient
}

export class ExternalLambdaInvoker implements Invoker<LambdaLocation> {
  /** One invoker and one lookup client per region and role, made when a function first needs them. */
  private readonly accounts = new Map<string, Account>()
  private readonly settings: LambdaSettings
  private readonly logger: Logger

  constructor(settings: LambdaSettings, logger: Logger = silentLogger) {
    this.settings = settings
    this.logger = logger
  }

  private accountFor(location: LambdaLocation): Account {
    const key = `${location.region ?? ''} ${location.role ?? ''}`
    let account = this.accounts.get(key)
    if (!account) {
      const region = location.region ?? this.settings.region
      account = {
        invoker: new LambdaInvoker({
          ...this.settings,
          region,
          credentials: credentialsFor(this.settings, location),
          logger: this.logger,
        }),
        client: lambdaClient(this.settings, location),
      }
      this.accounts.set(key, account)
    }
    return account
  }

  async prepare(target: FunctionTarget<LambdaLocation>): Promise<string | undefined> {
    const account = this.accountFor(target.location)
    const problem = await account.invoker.prepare(target)
    if (problem) return problem
    const state = await functionState(account.client, target.location.lambdaName)
    return state.ok ? undefined : `Lambda function "${target.location.lambdaName}" is ${state.detail}`
  }

  invoke(invocation: Invocation<LambdaLocation>): Promise<Outcome> {
    return this.accountFor(invocation.target.location).invoker.invoke(invocation)
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.accounts.values()].map(async ({ invoker, client }) => {
        await invoker.close()
        client.destroy()
      }),
    )
  }
}
