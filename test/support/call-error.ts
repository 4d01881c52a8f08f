/**
 * For tests that expect a tool call to be answered with an error: the
 * ToolCallError the call rejects with, or a failure that says what came
 * instead.
 */
import { ToolCallError } from '../../bridge/trustgraph/request-client.ts'

export const callError = (promise: Promise<unknown>): Promise<ToolCallError> =>
  promise.then(
    (text) => {
      throw new Error(`expected an error response, got the answer ${JSON.stringify(text)}`)
    },
    (err: unknown) => {
      if (!(err instanceof ToolCallError)) throw err
      return err
    },
  )
