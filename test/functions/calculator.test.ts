import { describe, expect, it } from 'vitest'
import { MAX_BITS, MAX_EXPONENT, MAX_PRECISION, calculate, handler } from '../../functions/calculator/handler.ts'
import { MAX_EXPRESSION_LENGTH, MAX_NESTING_DEPTH } from '../../functions/calculator/parse.ts'
import { Rational, WorkLimitError, gcd, withWorkLimit } from '../../functions/calculator/rational.ts'

const run = (expression: unknown, config: Record<string, unknown> = {}) =>
  handler({ user: 'u', config, arguments: { expression } }, undefined)

describe('calculator: results', () => {
  it.each([
    // exact decimals, where floating point would not be
    ['0.1+0.2', '0.3'],
    ['0.3-0.1', '0.2'],
    ['1.1*1.1', '1.21'],
    ['1/8', '0.125'],
    ['-5/2', '-2.5'],
    ['1/1024', '0.0009765625'],
    ['3/1', '3'],
    ['0', '0'],
    ['0.5-0.5', '0'],
    ['1-1/2-1/2', '0'],
    // number forms
    ['.5', '0.5'],
    ['1.', '1'],
    ['007', '7'],
    ['1e3', '1000'],
    ['1E3', '1000'],
    ['2.5e-3', '0.0025'],
    ['1.5e+2', '150'],
    ['1e-30', '0.000000000000000000000000000001'],
    ['12345678901234567890123456789 + 1', '12345678901234567890123456790'],
    // precedence and associativity
    ['1+2*3', '7'],
    ['(1+2)*3', '9'],
    ['10-4-3', '3'],
    ['100/10/5', '2'],
    ['2*3^2', '18'],
    ['2^3^2', '512'],
    ['(2^3)^2', '64'],
    ['2^-2', '0.25'],
    ['2^-2^2', '0.0625'],
    ['(-2)^2', '4'],
    ['(-2)^3', '-8'],
    ['-2^2', '-4'],
    ['2*-3', '-6'],
    ['2--3', '5'],
    ['--2', '2'],
    ['-+-2', '2'],
    ['+2', '2'],
    ['-(1+2)', '-3'],
    ['1+2%3*4', '9'],
    [' ( 1 +\t2 ) *\n3 ', '9'],
    // powers
    ['2^100', '1267650600228229401496703205376'],
    ['(1/2)^3', '0.125'],
    ['(2/3)^-2', '2.25'],
    ['(-2)^-3', '-0.125'],
    ['0^0', '1'],
    ['0^5', '0'],
    ['10^-3', '0.001'],
    // modulo: integers, sign of the dividend (like JavaScript)
    ['7%3', '1'],
    ['-7%3', '-1'],
    ['7%-3', '1'],
    ['6%3', '0'],
    ['10^30 % 7', '1'],
    ['4.0%3', '1'],
  ])('%s = %s', async (expression, expected) => {
    expect(await run(expression)).toBe(expected)
  })

  it('keeps every digit of big integers', async () => {
    const result = (await run('2^1000')) as string
    expect(result).toBe(String(2n ** 1000n))
    expect(await run('99999999999999999999 * 99999999999999999999')).toBe(String(99999999999999999999n ** 2n))
    expect(await run('(10^50 + 1) - 10^50')).toBe('1')
  })

  it('gives non-terminating fractions reduced, with a decimal rounded to the precision', async () => {
    expect(await run('1/3')).toBe('1/3 ≈ 0.33333333333333333333')
    expect(await run('2/3')).toBe('2/3 ≈ 0.66666666666666666667')
    expect(await run('-1/3')).toBe('-1/3 ≈ -0.33333333333333333333')
    expect(await run('4/6')).toBe('2/3 ≈ 0.66666666666666666667')
    expect(await run('7/3')).toBe('7/3 ≈ 2.33333333333333333333')
    expect(await run('1/7', { precision: 6 })).toBe('1/7 ≈ 0.142857')
    expect(await run('1/3+1/6+1/7')).toBe('9/14 ≈ 0.64285714285714285714')
    expect(await run('0.1/0.3')).toBe('1/3 ≈ 0.33333333333333333333')
    expect(await run('2/3', { precision: 0 })).toBe('2/3 ≈ 1')
    expect(await run('-1/3', { precision: 0 })).toBe('-1/3 ≈ 0') // never "-0"
    expect(await run('1/3', { precision: '3' })).toBe('1/3 ≈ 0.333') // scalar strings are accepted
    expect(await run('10^30/3', { precision: 2 })).toBe(`${10n ** 30n}/3 ≈ ${'3'.repeat(30)}.33`)
    const long = (await run('1/3', { precision: MAX_PRECISION })) as string
    expect(long).toBe(`1/3 ≈ 0.${'3'.repeat(MAX_PRECISION)}`)
  })
})

describe('calculator: errors', () => {
  it.each([
    ['1/0', /^division by zero at position 2$/],
    ['1/(1-1)', /^division by zero at position 2$/],
    ['5 % 0', /^division by zero at position 3/],
    ['0^-1', /^division by zero at position 2/],
    ['2**3', /^unexpected "\*" at position 3/],
    ['2+*3', /^unexpected "\*" at position 3/],
    ['*2', /^unexpected "\*" at position 1/],
    ['()', /^unexpected "\)" at position 2/],
    ['2 3', /^unexpected "3" at position 3/],
    ['2(3)', /^unexpected "\(" at position 2/],
    ['(1 2)', /^unexpected "2" at position 4/],
    ['2+', /^expected a number at position 3/],
    ['-', /^expected a number at position 2/],
    ['2^', /^expected a number at position 3/],
    ['(1+2', /^unbalanced parenthesis: "\(" at position 1 is never closed/],
    ['((1)', /^unbalanced parenthesis: "\(" at position 1/],
    ['1+2)', /^unbalanced parenthesis: "\)" at position 4 has no matching "\("/],
    [')', /^unexpected "\)" at position 1/],
    ['1.2.3', /^malformed number "1\.2\.3" at position 1/],
    ['1e', /^malformed number "1e" at position 1/],
    ['3 + 1e+', /^malformed number "1e\+" at position 5/],
    ['.', /^malformed number "\." at position 1/],
    ['2x', /^unexpected character "x" at position 2/],
    ['sqrt(4)', /^unexpected character "s" at position 1/],
    ['process.exit(1)', /^unexpected character "p" at position 1/],
    ['1 × 2', /^unexpected character "×" at position 3/],
    ['1.5 % 1', /^"%" at position 5 needs integer operands, got 3\/2 and 1/],
    ['2^0.5', /^exponent of "\^" at position 2 must be an integer, got 1\/2/],
    ['', /^empty expression$/],
    ['   ', /^empty expression$/],
  ])('%j fails', async (expression, message) => {
    await expect(run(expression)).rejects.toThrow(message)
  })

  it('throws plain Errors', async () => {
    const error = await run('1/0').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).name).toBe('Error')
  })

  it('refuses a precision out of range', async () => {
    await expect(run('1/3', { precision: -1 })).rejects.toThrow(/"precision" must be an integer from 0 to 1000/)
    await expect(run('1/3', { precision: MAX_PRECISION + 1 })).rejects.toThrow(/"precision"/)
  })
})

describe('calculator: argument check', () => {
  it('rejects a missing expression with InvalidArgumentsError', async () => {
    const error = await handler({ user: 'u', config: {}, arguments: {} }, undefined).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).name).toBe('InvalidArgumentsError')
    expect((error as Error).message).toMatch(/"expression" is required/)
  })

  it('rejects an expression that is not a string', async () => {
    await expect(run(42)).rejects.toMatchObject({ name: 'InvalidArgumentsError' })
  })

  it('rejects a precision that is not an integer', async () => {
    await expect(run('1/3', { precision: 'many' })).rejects.toMatchObject({ name: 'InvalidArgumentsError' })
    await expect(run('1/3', { precision: 2.5 })).rejects.toMatchObject({ name: 'InvalidArgumentsError' })
  })

  it('accepts config and arguments as JSON strings, as they come on the wire', async () => {
    const event = { user: 'u', config: '{"precision": 4}', arguments: '{"expression": "1/3"}' }
    expect(await handler(event, undefined)).toBe('1/3 ≈ 0.3333')
  })
})

describe('calculator: limits', () => {
  it('caps the expression length', async () => {
    const ok = '1+'.repeat(499) + '10'
    expect(ok).toHaveLength(MAX_EXPRESSION_LENGTH)
    expect(await run(ok)).toBe('509')
    await expect(run(ok + ' ')).rejects.toThrow(/^expression is too long \(1001 characters, at most 1000\)/)
  })

  it('caps the nesting depth', async () => {
    const nest = (n: number) => '('.repeat(n) + '1' + ')'.repeat(n)
    expect(await run(nest(MAX_NESTING_DEPTH))).toBe('1')
    await expect(run(nest(MAX_NESTING_DEPTH + 1))).rejects.toThrow(
      new RegExp(`^parentheses nested too deeply at position ${MAX_NESTING_DEPTH + 1} \\(at most 100 levels\\)`),
    )
  })

  it('caps exponents', async () => {
    expect(await run(`2^${MAX_EXPONENT}`)).toBe(String(2n ** 10000n))
    expect(await run(`1^-${MAX_EXPONENT}`)).toBe('1')
    await expect(run(`2^${MAX_EXPONENT + 1}`)).rejects.toThrow(/^exponent of "\^" at position 2 is too large/)
    await expect(run(`2^-${MAX_EXPONENT + 1}`)).rejects.toThrow(/^exponent of "\^" at position 2 is too large/)
    await expect(run('2^2^2^2^2')).rejects.toThrow(/^exponent of "\^" at position 2 is too large \(65536/)
    await expect(run('1e10001')).rejects.toThrow(/^number at position 1 has too large an exponent/)
    await expect(run('1e-10001')).rejects.toThrow(/^number at position 1 has too large an exponent/)
  })

  it('caps the size of numbers before computing them', async () => {
    expect(await run('10^10000')).toBe('1' + '0'.repeat(10000))
    await expect(run('(10^100)^10000')).rejects.toThrow(
      /^result too large at position 9 \(numbers are limited to 100000 bits/,
    )
    expect(await run('(2^10000)^9 * 2^9999')).toBe(String(2n ** 99999n)) // 100,000 bits: just fits
    await expect(run('(2^10000)^9 * 2^9999 * 2')).rejects.toThrow(/^result too large at position 22/)
    expect(MAX_BITS).toBe(100_000)
  })

  it('caps the total work on huge fractions', async () => {
    const big = '((7^9999)^3+1)/((3^9999)^6+2)' // ~85,000-bit numerator and ~95,000-bit denominator
    let expression = big
    while (expression.length + 17 <= MAX_EXPRESSION_LENGTH) expression += '+1/((3^9999)^6+2)'
    await expect(run(expression)).rejects.toThrow(/^too much computation at position \d+/)
    // while one such operation is fine
    expect(await run(`${big} + 1/((3^9999)^6+2)`)).toMatch(/^\d+\/\d+ ≈ \d+\.\d{20}$/)
  }, 20_000)
})

describe('rational arithmetic', () => {
  /** Deterministic pseudo-random bigints (xorshift). */
  function* randomBigints(seed: number): Generator<bigint> {
    let state = seed
    const next = () => {
      state ^= state << 13
      state ^= state >>> 17
      state ^= state << 5
      return state >>> 0
    }
    for (;;) {
      const words = next() % 80
      let value = 0n
      for (let i = 0; i < words; i++) value = (value << 32n) | BigInt(next())
      yield next() % 2 === 0 ? value : -value
    }
  }

  const euclid = (a: bigint, b: bigint): bigint => {
    if (a < 0n) a = -a
    if (b < 0n) b = -b
    while (b !== 0n) [a, b] = [b, a % b]
    return a
  }

  it("Lehmer's gcd agrees with Euclid's", () => {
    const random = randomBigints(12345)
    for (let i = 0; i < 500; i++) {
      const common = random.next().value as bigint
      const a = (random.next().value as bigint) * (i % 3 === 0 ? common : 1n)
      const b = (random.next().value as bigint) * (i % 2 === 0 ? common : 1n)
      expect(gcd(a, b)).toBe(euclid(a, b))
    }
    let [f0, f1] = [1n, 1n] // consecutive Fibonacci numbers: Euclid's worst case
    for (let i = 0; i < 3000; i++) [f0, f1] = [f1, f0 + f1]
    expect(gcd(f1 * 91n, f0 * 91n)).toBe(91n)
    expect(gcd(0n, -5n)).toBe(5n)
    expect(gcd(0n, 0n)).toBe(0n)
  })

  it('keeps values reduced with a positive denominator', () => {
    const r = Rational.of(6n, -4n)
    expect([r.num, r.den]).toEqual([-3n, 2n])
    const zero = Rational.of(1n, 4n).sub(Rational.of(1n, 4n))
    expect([zero.num, zero.den]).toEqual([0n, 1n])
    const product = Rational.of(2n, 3n).mul(Rational.of(9n, 4n))
    expect([product.num, product.den]).toEqual([3n, 2n])
    const quotient = Rational.of(1n, 2n).div(Rational.of(-3n, 4n))
    expect([quotient.num, quotient.den]).toEqual([-2n, 3n])
    const power = Rational.of(-2n, 3n).pow(-3n)
    expect([power.num, power.den]).toEqual([-27n, 8n])
    expect(() => Rational.of(1n, 0n)).toThrow('division by zero')
  })

  it('bounds gcd work with withWorkLimit', () => {
    const a = 7n ** 3000n + 1n
    const b = 3n ** 4000n + 2n
    expect(() => withWorkLimit(1000, () => gcd(a, b))).toThrow(WorkLimitError)
    expect(withWorkLimit(1e9, () => gcd(a, b))).toBe(euclid(a, b))
    expect(gcd(a, b)).toBe(euclid(a, b)) // the limit is lifted afterwards
  })

  it('calculate() works without the handler wrapper', () => {
    expect(calculate('0.1+0.2')).toBe('0.3')
  })
})
