/**
 * calculator-service: evaluates an arithmetic expression exactly, with
 * rational arithmetic on BigInt (no `eval`, no floating point).
 *
 * Argument `expression`: numbers (`12`, `0.1`, `.5`, `1e3`, `2.5e-3`),
 * `+ - * /`, `%` (remainder of integers, sign of the dividend), `^` (integer
 * power, right-associative, negative exponents allowed), unary `+`/`-`
 * (looser than `^`: `-2^2` is -4), parentheses. Config `precision`: digits
 * after the point when the result has no finite decimal expansion.
 *
 * Results: `0.1+0.2` → `0.3`; `1/3` → `1/3 ≈ 0.33333333333333333333`.
 * Mistakes are thrown as errors that name the 1-based position.
 */
import { defineToolService } from '../../shared/handler.ts'
import { at, parse, type BinaryOperator, type Node } from './parse.ts'
import { type Rational, WorkLimitError, withWorkLimit } from './rational.ts'

/** Largest |exponent| for `^`. */
export const MAX_EXPONENT = 10_000
/** Largest numerator or denominator, in bits, of any intermediate value (about 30,100 decimal digits). */
export const MAX_BITS = 100_000
export const MAX_PRECISION = 1000
/**
 * Work allowed for reducing fractions, in the units of `withWorkLimit`: well
 * under a second of CPU; about three gcds of 100,000-bit numbers, or a hundred
 * of 20,000-bit ones. Expressions of ordinary numbers never come near it.
 */
export const MAX_WORK = 500_000_000

function tooLarge(pos: number): Error {
  return new Error(`result too large at ${at(pos)} (numbers are limited to ${MAX_BITS} bits, about 30000 digits)`)
}

function apply(op: BinaryOperator, left: Rational, right: Rational, pos: number): Rational {
  switch (op) {
    case '+':
      return left.add(right)
    case '-':
      return left.sub(right)
    case '*':
      return left.mul(right)
    case '/':
      if (right.isZero) throw new Error(`division by zero at ${at(pos)}`)
      return left.div(right)
    case '%':
      if (!left.isInteger || !right.isInteger) {
        throw new Error(
          `"%" at ${at(pos)} needs integer operands, got ${left.toFractionString()} and ${right.toFractionString()}`,
        )
      }
      if (right.isZero) throw new Error(`division by zero at ${at(pos)} (modulo 0)`)
      return left.mod(right)
    case '^': {
      if (!right.isInteger) {
        throw new Error(`exponent of "^" at ${at(pos)} must be an integer, got ${right.toFractionString()}`)
      }
      const exponent = right.num
      const magnitude = exponent < 0n ? -exponent : exponent
      if (magnitude > BigInt(MAX_EXPONENT)) {
        throw new Error(`exponent of "^" at ${at(pos)} is too large (${right.num}; at most ${MAX_EXPONENT} either way)`)
      }
      if (left.isZero && exponent < 0n) throw new Error(`division by zero at ${at(pos)} (0 to a negative power)`)
      // bits(x^e) <= bits(x)·e: refuse before computing, not after.
      if (left.bitLength() * Number(magnitude) > MAX_BITS) throw tooLarge(pos)
      return left.pow(exponent)
    }
  }
}

function evaluate(node: Node): Rational {
  switch (node.kind) {
    case 'number':
      return node.value
    case 'negate':
      return evaluate(node.operand).neg()
    case 'binary': {
      const left = evaluate(node.left)
      const right = evaluate(node.right)
      let value: Rational
      try {
        value = apply(node.op, left, right, node.pos)
      } catch (err) {
        if (!(err instanceof WorkLimitError)) throw err
        throw new Error(
          `too much computation at ${at(node.pos)}: the numbers involved are too large for this many operations`,
        )
      }
      if (value.bitLength() > MAX_BITS) throw tooLarge(node.pos)
      return value
    }
  }
}

/**
 * The result text for `expression`: the exact decimal when it terminates,
 * otherwise the reduced fraction and a decimal rounded to `precision` digits
 * after the point. Throws an Error naming the position on any mistake.
 */
export function calculate(expression: string, precision = 20): string {
  if (!Number.isInteger(precision) || precision < 0 || precision > MAX_PRECISION) {
    throw new Error(`"precision" must be an integer from 0 to ${MAX_PRECISION}, got ${precision}`)
  }
  const tree = parse(expression)
  const value = withWorkLimit(MAX_WORK, () => evaluate(tree))
  return value.toExactDecimal() ?? `${value.toFractionString()} ≈ ${value.toFixed(precision)}`
}

export const handler = defineToolService({
  config: { precision: { type: 'integer', default: 20 } },
  arguments: { expression: { type: 'string', required: true } },
  async handler({ config, arguments: args }) {
    return calculate(args.expression, config.precision)
  },
})
