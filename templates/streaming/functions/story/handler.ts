import { defineToolService, lambdaStreaming } from 'toolbridge'

const BEATS = [
  (hero: string) => `Once upon a time, ${hero} set out to see the world.`,
  (hero: string) => `Along the way, ${hero} met a stranger with a map nobody could read.`,
  (hero: string) => `${hero} read it anyway, and found the way home.`,
]

// A handler that returns an async iterable streams: each yielded string is one chunk of the answer.
// lambdaStreaming() makes it stream on AWS Lambda too; elsewhere it changes nothing.
export const handler = lambdaStreaming(
  defineToolService({
    arguments: {
      hero: { type: 'string', required: true },
      sentences: { type: 'integer', default: 3 },
    },
    async handler({ arguments: args }) {
      if (args.sentences < 1 || args.sentences > 10) throw new Error('"sentences" must be between 1 and 10')
      return (async function* () {
        for (let i = 0; i < args.sentences; i++) yield (i > 0 ? ' ' : '') + BEATS[i % BEATS.length](args.hero)
      })()
    },
  }),
)
