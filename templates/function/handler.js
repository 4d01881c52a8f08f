import { defineToolService } from 'toolbridge'

export const handler = defineToolService({
  arguments: { input: { type: 'string', required: true } },
  async handler({ arguments: args }) {
    return `__FUNCTION__ got: ${args.input}`
  },
})
