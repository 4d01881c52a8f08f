/**
 * Whether a Lambda function is there and can be invoked, from `GetFunction`
 * (never by invoking it): for `toolbridge check`, and for someone else's
 * functions when the bridge starts. Also the Lambda clients for those
 * functions: their own region, and a role to assume if one is given.
 */
import { GetFunctionCommand, LambdaClient, type LambdaClientConfig } from '@aws-sdk/client-lambda'
import type { LambdaSettings } from '../../project/settings.ts'
import { isRecord } from '../../../shared/errors.ts'

export interface FunctionState {
  ok: boolean
  /** `Active`, or what is wrong: missing, failed, not allowed to look. */
  detail: string
}

/** Where to reach a function and as whom. */
export interface LambdaAccess {
  region: string | undefined
  role: string | undefined
}

const DUMMY_CREDENTIALS = { accessKeyId: 'toolbridge', secretAccessKey: 'toolbridge' }

type Credentials = LambdaClientConfig['credentials']

/**
 * Credentials of `role`, assumed with the standard credential chain's own
 * (STS AssumeRole, refreshed before they expire). @aws-sdk/credential-providers
 * is loaded only when a role is configured.
 */
export function assumedRoleCredentials(role: string, region: string | undefined): NonNullable<Credentials> {
  let provider:
    | Promise<() => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string; expiration?: Date }>>
    | undefined
  return async () => {
    provider ??= import('@aws-sdk/credential-providers').then(
      ({ fromTemporaryCredentials }) =>
        fromTemporaryCredentials({
          params: { RoleArn: role, RoleSessionName: 'toolbridge' },
          clientConfig: region ? { region } : {},
        }),
      (err: Error) => {
        throw new Error(`assuming ${role} needs the package @aws-sdk/credential-providers: ${err.message}`)
      },
    )
    return (await provider)()
  }
}

/** The credentials for calling a function: dummy ones for a local endpoint, an assumed role, or the standard chain's. */
export function credentialsFor(settings: LambdaSettings, access: LambdaAccess): Credentials {
  if (settings.dummyCredentials) return DUMMY_CREDENTIALS
  return access.role ? assumedRoleCredentials(access.role, access.region ?? settings.region) : undefined
}

export function lambdaClient(settings: LambdaSettings, access: LambdaAccess): LambdaClient {
  return new LambdaClient({
    endpoint: settings.endpoint,
    region: access.region ?? settings.region,
    credentials: credentialsFor(settings, access),
    maxAttempts: 2,
  })
}

/** GetFunction -> whether the function can be invoked, in words. */
export async function functionState(client: LambdaClient, name: string): Promise<FunctionState> {
  try {
    const { Configuration: config } = await client.send(new GetFunctionCommand({ FunctionName: name }))
    const state = config?.State ?? 'Active' // functions from before states existed report none
    const reason = config?.StateReason ? `: ${config.StateReason}` : ''
    if (state === 'Failed') return { ok: false, detail: `not invokable: its state is Failed${reason}` }
    if (state === 'Pending') return { ok: false, detail: `not invokable yet: its state is Pending${reason}` }
    if (config?.LastUpdateStatus === 'Failed')
      return {
        ok: false,
        detail: `not invokable: its last update failed${config.LastUpdateStatusReason ? `: ${config.LastUpdateStatusReason}` : ''}`,
      }
    if (state === 'Inactive')
      return { ok: true, detail: 'Inactive: the first call wakes it, and fails until it is Active again' }
    return { ok: true, detail: state }
  } catch (error) {
    const err = error as Error
    const where = await client.config.region().catch(() => 'no region')
    if (err.name === 'ResourceNotFoundException')
      return { ok: false, detail: `missing: no function "${name}" in ${where}` }
    if (err.name === 'AccessDeniedException')
      return { ok: false, detail: `cannot tell: not allowed to call GetFunction (lambda:GetFunction): ${err.message}` }
    // serverless-offline serves Invoke only: nothing to look the function up with, short of calling it.
    if (isRecord(err) && isRecord(err.$metadata) && err.$metadata.httpStatusCode === 404) {
      return {
        ok: true,
        detail:
          'not checked: this Lambda endpoint has no GetFunction API (serverless-offline has none); the first call will tell',
      }
    }
    return { ok: false, detail: `cannot tell: ${err.name}: ${err.message.split('\n')[0]}` }
  }
}
