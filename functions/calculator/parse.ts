/**
 * Tokenizer and recursive-descent parser for calculator expressions.
 *
 *   expression := term (("+" | "-") term)*
 *   term       := unary (("*" | "/" | "%") unary)*
 *   unary      := ("+" | "-")* power
 *   power      := primary ("^" unary)?          right-associative
 *   primary    := number | "(" expression ")"
 *   number     := (digits ["." digits] | "." digits) [("e" | "E") ["+" | "-"] digits]
 *
 * Unary minus binds looser than "^" (`-2^2` is -4) but an exponent may carry
 * its own sign (`2^-2`). Positions in error messages are 1-based character
 * positions in the original text.
 */
import { Rational } from './rational.ts'

export const MAX_EXPRESSION_LENGTH = 1000
export const MAX_NESTING_DEPTH = 100
/** Largest |exponent| in a number literal such as `1e300`. */
export const MAX_LITERAL_EXPONENT = 10_000

export type BinaryOperator = '+' | '-' | '*' | '/' | '%' | '^'

/** `pos` is the 0-based index of the literal, or of the operator. */
export type Node =
  | { kind: 'number'; value: Rational; pos: number }
  | { kind: 'negate'; operand: Node; pos: number }
  | { kind: 'binary'; op: BinaryOperator; left: Node; right: Node; pos: number }

type Token =
  | { kind: 'number'; text: string; pos: number }
  | { kind: 'op'; text: BinaryOperator; pos: number }
  | { kind: '(' | ')'; text: string; pos: number }
  | { kind: 'end'; text: ''; pos: number }

/** "position 3" for 0-based index 2. */
export const at = (pos: number): string => `position ${pos + 1}`

const NUMBER = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?/y
const OPERATORS = new Set<string>(['+', '-', '*', '/', '%', '^'])

function tokenize(text: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (/\s/.test(c)) {
      i++
    } else if (/[\d.]/.test(c)) {
      NUMBER.lastIndex = i
      const match = NUMBER.exec(text)
      const end = match ? i + match[0].length : i
      if (!match || /[eE.\d]/.test(text[end] ?? '')) {
        const bad = /^[\d.]+(?:[eE][-+]?)?[\w.]*/.exec(text.slice(i))![0] // the whole malformed run
        throw new Error(`malformed number "${bad}" at ${at(i)}`)
      }
      tokens.push({ kind: 'number', text: match[0], pos: i })
      i = end
    } else if (OPERATORS.has(c)) {
      tokens.push({ kind: 'op', text: c as BinaryOperator, pos: i })
      i++
    } else if (c === '(' || c === ')') {
      tokens.push({ kind: c, text: c, pos: i })
      i++
    } else {
      const char = String.fromCodePoint(text.codePointAt(i)!)
      throw new Error(`unexpected character ${JSON.stringify(char)} at ${at(i)}`)
    }
  }
  tokens.push({ kind: 'end', text: '', pos: text.length })
  return tokens
}

/** The exact value of a number literal. */
function literalValue(text: string, pos: number): Rational {
  const [, whole = '', fraction = '', exponent = '0'] = /^(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?$/.exec(text)!
  const e = BigInt(exponent)
  if (e > BigInt(MAX_LITERAL_EXPONENT) || e < -BigInt(MAX_LITERAL_EXPONENT)) {
    throw new Error(`number at ${at(pos)} has too large an exponent (at most ${MAX_LITERAL_EXPONENT})`)
  }
  const digits = BigInt(whole + fraction || '0')
  const scale = e - BigInt(fraction.length) // value = digits · 10^scale
  return scale >= 0n ? Rational.of(digits * 10n ** scale) : Rational.of(digits, 10n ** -scale)
}

/** Parses `text` into a syntax tree, or throws an Error that names the position. */
export function parse(text: string): Node {
  if (text.length > MAX_EXPRESSION_LENGTH) {
    throw new Error(`expression is too long (${text.length} characters, at most ${MAX_EXPRESSION_LENGTH})`)
  }
  if (text.trim() === '') throw new Error('empty expression')

  const tokens = tokenize(text)
  let index = 0
  let depth = 0
  const peek = (): Token => tokens[index]!
  const next = (): Token => tokens[index++]!
  const isOp = (token: Token, ...ops: BinaryOperator[]): boolean =>
    token.kind === 'op' && (ops as string[]).includes(token.text)

  function expression(): Node {
    let left = term()
    while (isOp(peek(), '+', '-')) {
      const op = next()
      left = { kind: 'binary', op: op.text as BinaryOperator, left, right: term(), pos: op.pos }
    }
    return left
  }

  function term(): Node {
    let left = unary()
    while (isOp(peek(), '*', '/', '%')) {
      const op = next()
      left = { kind: 'binary', op: op.text as BinaryOperator, left, right: unary(), pos: op.pos }
    }
    return left
  }

  function unary(): Node {
    let negative = false
    let first: Token | undefined
    while (isOp(peek(), '+', '-')) {
      const sign = next()
      first ??= sign
      if (sign.text === '-') negative = !negative
    }
    const operand = power()
    return negative ? { kind: 'negate', operand, pos: first!.pos } : operand
  }

  function power(): Node {
    const base = primary()
    if (!isOp(peek(), '^')) return base
    const op = next()
    return { kind: 'binary', op: '^', left: base, right: unary(), pos: op.pos }
  }

  function primary(): Node {
    const token = next()
    switch (token.kind) {
      case 'number':
        return { kind: 'number', value: literalValue(token.text, token.pos), pos: token.pos }
      case '(': {
        if (++depth > MAX_NESTING_DEPTH) {
          throw new Error(`parentheses nested too deeply at ${at(token.pos)} (at most ${MAX_NESTING_DEPTH} levels)`)
        }
        const inner = expression()
        const close = next()
        if (close.kind !== ')') {
          if (close.kind === 'end') {
            throw new Error(`unbalanced parenthesis: "(" at ${at(token.pos)} is never closed`)
          }
          throw new Error(`unexpected "${close.text}" at ${at(close.pos)}, expected an operator or ")"`)
        }
        depth--
        return inner
      }
      case 'end':
        throw new Error(`expected a number at ${at(token.pos)} (end of expression)`)
      default:
        throw new Error(`unexpected "${token.text}" at ${at(token.pos)}, expected a number`)
    }
  }

  const tree = expression()
  const rest = peek()
  if (rest.kind === ')') {
    throw new Error(`unbalanced parenthesis: ")" at ${at(rest.pos)} has no matching "("`)
  }
  if (rest.kind !== 'end') throw new Error(`unexpected "${rest.text}" at ${at(rest.pos)}, expected an operator`)
  return tree
}
