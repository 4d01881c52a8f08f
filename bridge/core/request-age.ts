/**
 * How long a request has waited, and whether that is longer than anyone
 * still waits for its answer (`maxAge`). A client that gave up (TrustGraph's
 * tool-service client after 600 s) will never read the answer: invoking the
 * function would be wasted work, and for a tool that books or sends, a side
 * effect nobody sees answered.
 *
 * The age is counted from the broker's timestamp (transport.ts `Delivery.timestamp`)
 * when it is believable, else from when this bridge first saw the request.
 */
import type { Refusal } from '../../shared/errors.ts'

/** A broker timestamp this far ahead of the bridge's clock is still taken (clocks of two hosts differ a little). */
export const CLOCK_SKEW_MS = 60_000

export interface AgeJudgement {
  ageMs: number
  /** What the age is counted from. */
  from: 'broker' | 'first-seen'
  /** Why the broker's timestamp was not believed, if it was not. */
  distrusted?: string
}

/**
 * The request's age at `nowMs`. A timestamp that is not a positive finite
 * number (Kafka's -1 for "none", zero, negative) or lies more than
 * CLOCK_SKEW_MS in the future is distrusted: the age then counts from
 * `firstSeenMs`, so nonsense neither expires a fresh request nor keeps a
 * stale one alive for ever. A timestamp slightly in the future is age 0.
 */
export function judgeAge(brokerTimestamp: number | undefined, firstSeenMs: number, nowMs: number): AgeJudgement {
  const distrusted = distrust(brokerTimestamp, nowMs)
  if (brokerTimestamp === undefined || distrusted !== undefined) {
    const judged: AgeJudgement = { ageMs: Math.max(0, nowMs - firstSeenMs), from: 'first-seen' }
    if (distrusted !== undefined) judged.distrusted = distrusted
    return judged
  }
  return { ageMs: Math.max(0, nowMs - brokerTimestamp), from: 'broker' }
}

function distrust(timestamp: number | undefined, nowMs: number): string | undefined {
  if (timestamp === undefined) return undefined
  if (!Number.isFinite(timestamp) || timestamp <= 0) return `the broker's timestamp ${timestamp} is not a time`
  if (timestamp > nowMs + CLOCK_SKEW_MS) {
    const ahead = Math.round((timestamp - nowMs) / 1000)
    return `the broker's timestamp ${new Date(timestamp).toISOString()} is ${ahead} s in the future`
  }
  return undefined
}

/** An `expired` refusal when the age is over `maxAgeMs` (0: no limit), else undefined. */
export function expiry(judged: AgeJudgement, maxAgeMs: number): Refusal | undefined {
  if (maxAgeMs === 0 || judged.ageMs <= maxAgeMs) return undefined
  const since = judged.from === 'broker' ? 'since the broker took it' : 'since the bridge first saw it'
  return {
    ok: false,
    kind: 'expired',
    message: `the request waited ${seconds(judged.ageMs)} s ${since}, over its maxAge of ${seconds(maxAgeMs)} s; the function was not called`,
  }
}

const seconds = (ms: number): string => String(Math.round(ms / 100) / 10)
