/**
 * The environment variables a function sees in a worker thread, as on
 * Lambda: what Lambda itself sets, the host's paths, locale, time zone and
 * AWS region, then the provider's and the function's `environment:` from
 * serverless.yml. Nothing else of the bridge's own environment: not its
 * settings (TOOLBRIDGE_*), tokens, broker URLs or cloud credentials.
 */
import type { HandlerLocation } from '../project/tool-services.ts'
import type { FunctionTarget } from './invoker.ts'

/** Taken from the bridge's environment when set: none of them is a secret. */
const FROM_HOST = ['PATH', 'HOME', 'TMPDIR', 'TEMP', 'TMP', 'LANG', 'LC_ALL', 'TZ', 'AWS_REGION', 'AWS_DEFAULT_REGION']

export function functionEnvironment(target: FunctionTarget<HandlerLocation>, baseDir: string): Record<string, string> {
  const environment: Record<string, string> = {}
  for (const name of FROM_HOST) {
    const value = process.env[name]
    if (value !== undefined) environment[name] = value
  }
  environment.AWS_LAMBDA_FUNCTION_NAME = target.location.lambdaName
  environment.AWS_LAMBDA_FUNCTION_VERSION = '$LATEST'
  if (target.memoryMb !== undefined) environment.AWS_LAMBDA_FUNCTION_MEMORY_SIZE = String(target.memoryMb)
  environment._HANDLER = target.location.handler
  environment.LAMBDA_TASK_ROOT = baseDir
  return { ...environment, ...target.environment }
}
