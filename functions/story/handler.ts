/**
 * story-service: streams a short story one sentence at a time, to show a
 * tool that answers in chunks (an async generator is a streaming handler).
 * `lambdaStreaming` makes it stream on AWS Lambda too (response streaming);
 * in process and under serverless-offline it changes nothing the bridge sees.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { defineToolService, lambdaStreaming } from '../../shared/handler.ts'

function* sentences(hero: string, place: string, length: number): Generator<string> {
  const beats = [
    `Once upon a time, ${hero} lived in ${place}.`,
    `Every morning, ${hero} looked at the horizon and wondered what lay beyond it.`,
    `One day a stranger arrived with a map that nobody in ${place} could read.`,
    `${hero} studied it for three nights and found a path hidden between the lines.`,
    `The path led through a forest where the trees whispered old names.`,
    `At its end stood a door, and behind the door, a room full of unfinished stories.`,
    `${hero} picked one, sat down, and began to write its ending.`,
    `And that is why, to this day, the people of ${place} leave their stories open.`,
  ]
  for (let i = 0; i < length; i++) yield beats[i % beats.length]!
}

export const handler = lambdaStreaming(
  defineToolService({
    config: { pace: { type: 'integer', default: 0 } }, // milliseconds between sentences
    arguments: {
      hero: { type: 'string', required: true },
      place: { type: 'string', default: 'a small town by the sea' },
      sentences: { type: 'integer', default: 5 },
    },
    async handler({ config, arguments: args }) {
      if (args.sentences < 1 || args.sentences > 100) throw new Error('"sentences" must be between 1 and 100')
      return (async function* () {
        let first = true
        for (const sentence of sentences(args.hero, args.place, args.sentences)) {
          if (!first && config.pace > 0) await sleep(config.pace)
          yield (first ? '' : ' ') + sentence
          first = false
        }
      })()
    },
  }),
)
