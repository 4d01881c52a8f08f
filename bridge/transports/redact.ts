/** A broker URL fit for logs: any password replaced. */
export function redact(broker: string): string {
  try {
    const url = new URL(broker)
    if (url.password) url.password = '***'
    return url.toString()
  } catch {
    return broker.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')
  }
}
