/**
 * Exact rational numbers on BigInt: always reduced, denominator > 0.
 *
 * The arithmetic itself has no size limits; callers (the calculator's
 * evaluator) check `bitLength()` and exponents before they get out of hand.
 */

/** Thrown when a computation spends more than its `withWorkLimit` allowance. */
export class WorkLimitError extends Error {
  override name = 'WorkLimitError'
}

let workLeft = Infinity

/**
 * Runs `compute` with at most `limit` units of gcd work (one unit: one bit of
 * the larger operand, per Lehmer step). The gcds are the only super-linear
 * cost that grows with the number of operations, so this bounds CPU time.
 * `compute` must be synchronous.
 */
export function withWorkLimit<T>(limit: number, compute: () => T): T {
  const saved = workLeft
  workLeft = limit
  try {
    return compute()
  } finally {
    workLeft = saved
  }
}

/** Bit size of a double-precision Lehmer step: small enough that every quotient is exact. */
const WORD = 48

/**
 * gcd(|a|, |b|) by Lehmer's algorithm (Knuth, TAOCP 4.5.2, Algorithm L):
 * Euclid's steps are simulated on the leading 48 bits in floating point and
 * applied to the BigInts in one go, which is an order of magnitude faster
 * than plain Euclid on numbers of thousands of digits.
 */
export function gcd(a: bigint, b: bigint): bigint {
  if (a < 0n) a = -a
  if (b < 0n) b = -b
  if (a < b) [a, b] = [b, a]
  while (b !== 0n) {
    const size = bitLength(a)
    if (size <= 64) break
    if ((workLeft -= size) < 0) throw new WorkLimitError('too much work')
    const shift = BigInt(size - WORD)
    let x = Number(a >> shift)
    let y = Number(b >> shift)
    let [p, q, r, s] = [1, 0, 0, 1] // (a, b) becomes (p·a + q·b, r·a + s·b)
    while (y + r > 0 && y + s > 0) {
      const quotient = Math.floor((x + p) / (y + r))
      if (quotient !== Math.floor((x + q) / (y + s))) break
      ;[p, r] = [r, p - quotient * r]
      ;[q, s] = [s, q - quotient * s]
      ;[x, y] = [y, x - quotient * y]
    }
    if (q === 0)
      [a, b] = [b, a % b] // no simulated step was safe: one real one
    else [a, b] = [BigInt(p) * a + BigInt(q) * b, BigInt(r) * a + BigInt(s) * b]
  }
  while (b !== 0n) [a, b] = [b, a % b]
  return a
}

/** Bits needed to write |x| (0 for 0). */
export function bitLength(x: bigint): number {
  if (x < 0n) x = -x
  if (x === 0n) return 0
  const hex = x.toString(16)
  return (hex.length - 1) * 4 + parseInt(hex[0]!, 16).toString(2).length
}

export class Rational {
  /** Numerator; carries the sign. */
  readonly num: bigint
  /** Denominator; always > 0, coprime with `num`. */
  readonly den: bigint

  private constructor(num: bigint, den: bigint) {
    this.num = num
    this.den = den
  }

  static readonly ZERO = new Rational(0n, 1n)

  /** num/den, reduced. Throws on a zero denominator. */
  static of(num: bigint, den = 1n): Rational {
    if (den === 0n) throw new Error('division by zero')
    if (den < 0n) {
      num = -num
      den = -den
    }
    const g = gcd(num, den)
    return g === 1n ? new Rational(num, den) : new Rational(num / g, den / g)
  }

  get isZero(): boolean {
    return this.num === 0n
  }

  get isInteger(): boolean {
    return this.den === 1n
  }

  /** Bits of the larger of numerator and denominator: a measure of size. */
  bitLength(): number {
    return Math.max(bitLength(this.num), bitLength(this.den))
  }

  neg(): Rational {
    return new Rational(-this.num, this.den)
  }

  add(other: Rational): Rational {
    // Knuth, TAOCP 4.5.1: the gcds run on the denominators, not on the (larger) cross sums.
    const g = gcd(this.den, other.den)
    if (g === 1n) return new Rational(this.num * other.den + other.num * this.den, this.den * other.den)
    const t = this.num * (other.den / g) + other.num * (this.den / g)
    if (t === 0n) return Rational.ZERO
    const h = gcd(t, g)
    return new Rational(t / h, (this.den / g) * (other.den / h))
  }

  sub(other: Rational): Rational {
    return this.add(other.neg())
  }

  mul(other: Rational): Rational {
    // Cross-cancel first (Knuth again): the factors are coprime afterwards, so no final gcd.
    const g1 = gcd(this.num, other.den)
    const g2 = gcd(other.num, this.den)
    return new Rational((this.num / g1) * (other.num / g2), (this.den / g2) * (other.den / g1))
  }

  div(other: Rational): Rational {
    if (other.isZero) throw new Error('division by zero')
    return this.mul(other.reciprocal())
  }

  /** 1/this, without a gcd (numerator and denominator are already coprime). */
  reciprocal(): Rational {
    if (this.isZero) throw new Error('division by zero')
    return this.num < 0n ? new Rational(-this.den, -this.num) : new Rational(this.den, this.num)
  }

  /** Remainder of integers, truncated like JavaScript's `%`: the sign follows the dividend. */
  mod(other: Rational): Rational {
    if (!this.isInteger || !other.isInteger) throw new Error('modulo needs integers')
    if (other.isZero) throw new Error('division by zero')
    return new Rational(this.num % other.num, 1n)
  }

  /** this^exponent for an integer exponent, negative allowed; 0^0 is 1. */
  pow(exponent: bigint): Rational {
    if (exponent < 0n) {
      if (this.isZero) throw new Error('division by zero')
      // (n/d)^-e = d^e / n^e; n^e and d^e stay coprime, so no reduction needed.
      const e = -exponent
      const num = this.den ** e
      const den = this.num ** e
      return den < 0n ? new Rational(-num, -den) : new Rational(num, den)
    }
    return new Rational(this.num ** exponent, this.den ** exponent)
  }

  /**
   * The exact decimal expansion if it terminates (the denominator has no prime
   * factors but 2 and 5), otherwise undefined. No exponent notation, no
   * trailing zeros: `1/8` → `0.125`, `-5/2` → `-2.5`, `2^100` → all digits.
   */
  toExactDecimal(): string | undefined {
    const twos = bitLength(this.den & -this.den) - 1
    const rest = this.den >> BigInt(twos)
    const base5 = rest.toString(5) // a power of 5 is "1" followed by zeros
    if (!/^10*$/.test(base5)) return undefined
    const fives = base5.length - 1
    const scale = Math.max(twos, fives)
    // |num| · 10^scale / den, exactly; its last digit is not 0 since scale is minimal.
    const scaled = abs(this.num) * 2n ** BigInt(scale - twos) * 5n ** BigInt(scale - fives)
    return sign(this.num) + pointed(scaled, scale)
  }

  /**
   * A decimal with exactly `digits` fractional digits, rounded half away
   * from zero: `2/3`, 4 → `0.6667`. Never `-0`.
   */
  toFixed(digits: number): string {
    const scale = 10n ** BigInt(digits)
    const rounded = (2n * abs(this.num) * scale + this.den) / (2n * this.den)
    return (rounded === 0n ? '' : sign(this.num)) + pointed(rounded, digits)
  }

  /** `n/d`, or just `n` for an integer. */
  toFractionString(): string {
    return this.isInteger ? String(this.num) : `${this.num}/${this.den}`
  }
}

const abs = (x: bigint): bigint => (x < 0n ? -x : x)
const sign = (x: bigint): string => (x < 0n ? '-' : '')

/** The non-negative integer `value` / 10^decimals written with a decimal point. */
function pointed(value: bigint, decimals: number): string {
  if (decimals === 0) return value.toString()
  const digits = value.toString().padStart(decimals + 1, '0')
  return `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`
}
