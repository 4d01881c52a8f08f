/**
 * JSON text as Python's `json.dumps` writes it with its defaults, which is
 * what TrustGraph's services put on the wire: `", "` and `": "` separators
 * and every non-ASCII character escaped (`ensure_ascii`). Any JSON parser
 * reads either form; writing this one makes our messages byte-identical to
 * TrustGraph's own. Numbers are written as JavaScript prints them.
 */

const NON_ASCII = /[\u007f-\uffff]/g // Python escapes everything outside " "..."~"

const escapeNonAscii = (char: string) => '\\u' + char.charCodeAt(0).toString(16).padStart(4, '0')

/** A JSON string literal with `ensure_ascii` escaping (astral characters as surrogate pairs, like Python). */
export function pythonJsonString(text: string): string {
  const literal = JSON.stringify(text)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the range starts at U+0000 on purpose: anything outside printable ASCII and its controls
  return /[^\u0000-\u007e]/.test(literal) ? literal.replace(NON_ASCII, escapeNonAscii) : literal
}

export function pythonJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'string') return pythonJsonString(value)
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null'
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  if (Array.isArray(value)) return '[' + value.map(pythonJsonDumps).join(', ') + ']'
  if (typeof value === 'object') {
    const fields: string[] = []
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined || typeof item === 'function') continue
      fields.push(pythonJsonString(key) + ': ' + pythonJsonDumps(item))
    }
    return '{' + fields.join(', ') + '}'
  }
  return 'null'
}
