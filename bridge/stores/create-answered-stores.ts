/**
 * Picks where the answered-once records live: this process's memory unless
 * `--answered-store` names a shared store. The Redis client is imported only
 * when one is named.
 */
import type { SharedStoreSettings } from '../project/settings.ts'
import type { Logger } from '../support/logger.ts'
import type { AnsweredStores } from './answered-store.ts'
import { memoryAnsweredStores } from './memory-answered-store.ts'

export async function createAnsweredStores(
  shared: SharedStoreSettings | undefined,
  logger: Logger,
): Promise<AnsweredStores> {
  if (shared === undefined) return memoryAnsweredStores
  const { createRedisAnsweredStores } = await import('./redis-answered-store.ts')
  return createRedisAnsweredStores({ ...shared, logger })
}
