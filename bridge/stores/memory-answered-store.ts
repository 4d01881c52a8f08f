import type { BoundedMemoryLimits } from '../support/bounded-memory.ts'
import { createAnsweredOnce } from './answered-once.ts'
import { type AnsweredStore, type AnsweredStores, answers } from './answered-store.ts'

/** This process's memory: claims are promises other copies await, answers a bounded memory. */
export function createMemoryAnsweredStore(limits: BoundedMemoryLimits, now: () => number = Date.now): AnsweredStore {
  const answered = createAnsweredOnce(limits)
  const running = new Map<string, Promise<void>>()
  return {
    async claim(key, replay) {
      // Checked and set with no wait in between, so that of several copies waiting one claims.
      for (let held = running.get(key); held !== undefined; held = running.get(key)) await held
      const kept = answered.recall(key, now())
      if (kept !== undefined && answers(kept.replay, replay)) return { kind: 'answered', messages: kept.messages }
      let ended = false
      let end: () => void = () => {}
      running.set(
        key,
        new Promise<void>((resolve) => {
          end = resolve
        }),
      )
      const release = () => {
        if (ended) return
        ended = true
        running.delete(key)
        end()
      }
      return {
        kind: 'claimed',
        lease: {
          async complete(messages) {
            if (!ended) answered.remember(key, { messages, replay }, now())
            release()
          },
          release,
        },
      }
    },
  }
}

/** The default: each service's records in this process. */
export const memoryAnsweredStores: AnsweredStores = {
  forService: (_service, limits, now) => createMemoryAnsweredStore(limits, now),
  close: async () => {},
}
