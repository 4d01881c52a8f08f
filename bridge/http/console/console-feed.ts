/**
 * What the web console shows besides the tools: every request the bridge
 * answers (its timing and size, the same duration /metrics observes), and the state of the
 * code `toolbridge dev` serves. It outlives a restart of the bridge (a
 * changed serverless.yml), so the log and charts go on where they were.
 */
import { wireErrorType } from '../../../shared/protocol.ts'
import type { AnsweredRequest } from '../../core/bridge.ts'
import { EventStreams } from './event-streams.ts'
import { RequestLog } from './request-log.ts'
import { ToolStats } from './tool-stats.ts'

/** The code being served: as loaded, or an edit that could not be (the last good code serving on). */
export interface CodeStatus {
  state: 'ok' | 'broken'
  /** Epoch ms. */
  at: number
  message: string
  /** The file at fault, relative to the project, and its line when known. */
  file?: string
  line?: number
}

export const LOG_CAPACITY = 500
const CHART_MINUTES = 15
const SAMPLES_PER_MINUTE = 1000

export class ConsoleFeed {
  readonly log = new RequestLog(LOG_CAPACITY)
  readonly stats = new ToolStats({ minutes: CHART_MINUTES, samplesPerMinute: SAMPLES_PER_MINUTE })
  /** The console's event streams, which outlive a restart of the gateway as the log does. */
  readonly streams = new EventStreams(this)
  private current: CodeStatus | undefined
  private readonly statusListeners = new Set<(status: CodeStatus) => void>()

  get status(): CodeStatus | undefined {
    return this.current
  }

  setStatus(status: CodeStatus): void {
    this.current = status
    for (const listener of this.statusListeners) listener(status)
  }

  onStatus(listener: (status: CodeStatus) => void): () => void {
    this.statusListeners.add(listener)
    return () => this.statusListeners.delete(listener)
  }

  /**
   * A call the gateway refused before it reached the broker (422, 413, 429): a row of the log and an
   * error in the charts, as the bridge's own refusals are, with no time spent.
   */
  refused(service: string, tool: string, outcome: string): void {
    const at = Date.now()
    this.log.add({ at, service, tool, id: '', outcome, ms: 0, queueMs: undefined, invokeMs: undefined, bytes: 0 })
    this.stats.observe(tool, false, 0, at)
  }

  /** The bridge's `onAnswered`: one row of the log, one observation of the charts. */
  readonly answered = (request: AnsweredRequest): void => {
    const at = Date.now()
    const { service, tool, id, errorKind, queueMs, invokeMs, totalMs, answerBytes } = request
    const outcome = errorKind === undefined ? 'ok' : wireErrorType(errorKind)
    this.log.add({ at, service, tool, id, outcome, ms: totalMs, queueMs, invokeMs, bytes: answerBytes })
    this.stats.observe(tool, errorKind === undefined, totalMs, at)
  }
}
