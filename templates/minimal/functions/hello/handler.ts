import { defineToolService } from 'toolbridge'

export const handler = defineToolService({
  arguments: { name: { type: 'string', required: true } },
  async handler({ arguments: args }) {
    return `Hello, ${args.name}!`
  },
})
