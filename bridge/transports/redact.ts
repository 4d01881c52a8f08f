/** Query parameters whose values are secrets, whatever the broker calls them. */
const SECRET_PARAMETER = /pass|secret|token|key|auth|credential|sig/i

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
    return broker
      .replace(/\/\/[^@/]*@/, '//***@')
      .replace(/([?&][^=&]*(?:pass|secret|token|key|auth|credential|sig)[^=&]*=)[^&]*/gi, '$1***')
  }
  if (url.password) url.password = '***'
  else if (url.username) url.username = '***'
  for (const name of [...url.searchParams.keys()]) if (SECRET_PARAMETER.test(name)) url.searchParams.set(name, '***')
  return url.toString().replaceAll('%2A%2A%2A', '***')
}
