/**
 * What TrustGraph is told about serverless.yml's example tools: the tool
 * object `toolbridge descriptors` prints and `toolbridge register` writes
 * for tell-joke, as its tests expect it byte for byte.
 */
export const TELL_JOKE_TOOL = {
  type: 'tool-service',
  name: 'tell-joke',
  description: 'Tell a joke on a given topic',
  service: 'joke-service',
  style: 'pun',
  arguments: [{ name: 'topic', type: 'string', description: 'The topic for the joke' }],
}
