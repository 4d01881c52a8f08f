/**
 * joke-service, the example of TrustGraph's tool-services specification:
 * config `style` (pun, dad-joke, one-liner), argument `topic`.
 */
import { defineToolService } from '../../shared/handler.ts'

export const STYLES = ['pun', 'dad-joke', 'one-liner'] as const
type Style = (typeof STYLES)[number]

const JOKES: Record<Style, Record<string, string>> = {
  pun: {
    programming: 'I told my computer a joke about UDP. I am not sure it got it.',
    cats: 'What do you call a pile of cats? A meowtain.',
    music: 'I used to play piano by ear, but now I use my hands.',
    default: 'I would tell you a joke about {topic}, but it is still in the pun-ding stage.',
  },
  'dad-joke': {
    programming: 'Why do programmers prefer dark mode? Because light attracts bugs.',
    cats: 'Why was the cat sitting on the computer? To keep an eye on the mouse.',
    music: 'Why did the musician get locked out? He could not find the right key.',
    default: 'I asked my dad for a joke about {topic}. He said he would get back to me… he is still out buying milk.',
  },
  'one-liner': {
    programming: 'There are 10 kinds of people: those who understand binary and those who do not.',
    cats: 'Cats have nine lives, and spend eight of them asleep.',
    music: 'Music is the only thing I am not afraid to face the music about.',
    default: '{topic}: like a joke, it is better when you do not have to explain it.',
  },
}

export const handler = defineToolService({
  config: { style: { type: 'string', default: 'pun' } },
  arguments: { topic: { type: 'string', required: true } },
  async handler({ user, config, arguments: args }) {
    if (!(STYLES as readonly string[]).includes(config.style)) {
      throw new Error(`unknown style "${config.style}": use one of ${STYLES.join(', ')}`)
    }
    const style = config.style as Style
    const topic = args.topic.trim()
    const jokes = JOKES[style]
    // Object.hasOwn: a topic such as "constructor" must not find Object.prototype's members.
    const key = topic.toLowerCase()
    const joke = (Object.hasOwn(jokes, key) ? jokes[key]! : jokes.default!).replace('{topic}', topic)
    return `Hey ${user || 'there'}! Here's a ${style} for you:\n\n${joke}`
  },
})
