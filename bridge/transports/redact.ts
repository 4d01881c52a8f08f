/** Words that mark a query parameter's value as a secret, whatever the broker calls it. */
const SECRET_WORDS = 'pass|secret|token|key|auth|credential|sig'
const SECRET_PARAMETER = new RegExp(SECRET_WORDS, 'i')
/** The same parameters in text that does not parse as a URL. */
const SECRET_PARAMETER_IN_TEXT = new RegExp(`([?&][^=&]*(?:${SECRET_WORDS})[^=&]*=)[^&]*`, 'gi')

/**
 * A broker URL fit for logs: a password replaced, a user name standing alone
 * (where some clients put a token) replaced, and query parameters that name a
 * secret replaced.
 */
export function redact(broker: string): string {
  let url: URL
  try {
    url = new URL(broker)
  } catch {
    return broker.replace(/\/\/[^@/]*@/, '//***@').replace(SECRET_PARAMETER_IN_TEXT, '$1***')
  }
  if (url.password) url.password = '***'
  else if (url.username) url.username = '***'
  for (const name of [...url.searchParams.keys()]) if (SECRET_PARAMETER.test(name)) url.searchParams.set(name, '***')
  return url.toString()
}
