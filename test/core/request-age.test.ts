import { describe, expect, it } from 'vitest'
import { CLOCK_SKEW_MS, expiry, judgeAge } from '../../bridge/core/request-age.ts'

const NOW = 1_800_000_000_000

describe('judgeAge: how long a request has waited', () => {
  it("counts from the broker's timestamp when it is believable", () => {
    expect(judgeAge(NOW - 5_000, NOW - 1_000, NOW)).toStrictEqual({ ageMs: 5_000, from: 'broker' })
  })

  it('counts from when the bridge first saw it when the broker gives no timestamp (TrustGraph on RabbitMQ)', () => {
    expect(judgeAge(undefined, NOW - 1_000, NOW)).toStrictEqual({ ageMs: 1_000, from: 'first-seen' })
  })

  it.each([
    [0, 'is not a time'],
    [-1, 'is not a time'], // Kafka's "no timestamp"
    [-5_000, 'is not a time'],
    [Number.NaN, 'is not a time'],
    [Number.POSITIVE_INFINITY, 'is not a time'],
  ])('distrusts the timestamp %s: the age counts from the first sighting', (timestamp, why) => {
    const judged = judgeAge(timestamp, NOW - 2_000, NOW)
    expect(judged).toMatchObject({ ageMs: 2_000, from: 'first-seen' })
    expect(judged.distrusted).toBe(`the broker's timestamp ${timestamp} ${why}`)
  })

  it('distrusts a timestamp further in the future than clocks differ, and says how far', () => {
    const judged = judgeAge(NOW + 3_600_000, NOW, NOW)
    expect(judged).toStrictEqual({
      ageMs: 0,
      from: 'first-seen',
      distrusted: `the broker's timestamp ${new Date(NOW + 3_600_000).toISOString()} is 3600 s in the future`,
    })
  })

  it('takes a timestamp a little ahead (clock skew) as age 0, and one just past the skew as nonsense', () => {
    expect(judgeAge(NOW + CLOCK_SKEW_MS, NOW - 9_000, NOW)).toStrictEqual({ ageMs: 0, from: 'broker' })
    expect(judgeAge(NOW + CLOCK_SKEW_MS + 1, NOW - 9_000, NOW)).toMatchObject({ ageMs: 9_000, from: 'first-seen' })
  })

  it('never gives a negative age, whatever the first sighting says', () => {
    expect(judgeAge(undefined, NOW + 10, NOW).ageMs).toBe(0)
  })
})

describe('expiry: over maxAge', () => {
  it('is an expired refusal that gives the age, where it counts from and the limit', () => {
    expect(expiry({ ageMs: 12_345, from: 'broker' }, 10_000)).toStrictEqual({
      ok: false,
      kind: 'expired',
      message:
        'the request waited 12.3 s since the broker took it, over its maxAge of 10 s; the function was not called',
    })
    expect(expiry({ ageMs: 700_000, from: 'first-seen' }, 600_000)?.message).toBe(
      'the request waited 700 s since the bridge first saw it, over its maxAge of 600 s; the function was not called',
    )
  })

  it('lets a request of exactly maxAge through, and anything with maxAge 0 (no limit)', () => {
    expect(expiry({ ageMs: 10_000, from: 'broker' }, 10_000)).toBeUndefined()
    expect(expiry({ ageMs: 10_001, from: 'broker' }, 10_000)).toBeDefined()
    expect(expiry({ ageMs: 10 ** 12, from: 'broker' }, 0)).toBeUndefined()
  })
})
