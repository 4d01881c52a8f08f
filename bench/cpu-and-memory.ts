/**
 * What a process has used, read for a bench's numbers: the CPU time of this
 * process or of its main thread (probes a closed loop reads around itself),
 * and the CPU time and resident memory of another process from Linux's /proc.
 */
import { readFileSync } from 'node:fs'
import type { Probe } from './closed-loop.ts'

/** CPU microseconds this process (all threads) has used. */
export const processCpuUs: Probe = () => {
  const { user, system } = process.cpuUsage()
  return user + system
}

/** CPU microseconds the calling (main) thread has used. */
export const threadCpuUs: Probe = () => {
  const { user, system } = process.threadCpuUsage()
  return user + system
}

/** CPU microseconds another process has used so far, all its threads (utime + stime in /proc/<pid>/stat, clock ticks of 1/100 s as on Linux). */
export function processCpuUsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ') // after "pid (comm) ": field 3 onward
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
}

/** Resident memory of a process, MiB (Linux /proc). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]) / 1024
}
