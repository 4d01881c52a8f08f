/**
 * What the web console shows besides the tools: every request the bridge
 * answers (through the same observations as /metrics), and the state of the
 * code `toolbridge dev` serves. It outlives a restart of the bridge (a
 * changed serverless.yml), so the log and charts go on where they were.
 */
import type { ErrorKind } from '../../../shared/errors.ts'
import { wireErrorType } from '../../../shared/protocol.ts'
import type { BridgeMetrics } from '../../support/metrics.ts'
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

  answered(service: string, tool: string, errorKind: ErrorKind | undefined, seconds: number): void {
    const at = Date.now()
    const ms = seconds * 1000
    this.log.add({ at, service, tool, outcome: errorKind === undefined ? 'ok' : wireErrorType(errorKind), ms })
    this.stats.observe(tool, errorKind === undefined, ms, at)
  }

  /** `metrics` that also tell this feed of each answered request. */
  watching(metrics: BridgeMetrics): BridgeMetrics {
    return {
      transportReconnected: (transport) => metrics.transportReconnected(transport),
      forService: (service) => {
        const inner = metrics.forService(service)
        // Every other measure passes through as it is.
        return {
          ...inner,
          answered: (tool, errorKind, seconds) => {
            inner.answered(tool, errorKind, seconds)
            this.answered(service, tool, errorKind, seconds)
          },
        }
      },
    }
  }
}
