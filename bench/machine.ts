/**
 * The machine a bench ran on, as it says it and writes it with its results:
 * cores, CPU, memory, node and the versions the bench depends on, and the
 * load average, since other work on the machine skews every number.
 */
import os from 'node:os'

export interface Machine {
  cores: number
  availableParallelism: number
  cpuModel: string
  totalMemoryMiB: number
  node: string
  platform: string
}

/** The machine and node; `versions` (of what else a bench depends on) follow node's. */
export function machineInfo<V extends Record<string, string>>(versions: V): Machine & V {
  const cpus = os.cpus()
  return {
    cores: cpus.length,
    availableParallelism: os.availableParallelism(),
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    totalMemoryMiB: Math.round(os.totalmem() / 2 ** 20),
    node: process.version,
    ...versions,
    platform: `${process.platform} ${os.release()} ${process.arch}`,
  }
}

export function describeMachine(machine: Machine): string {
  return `machine: ${machine.cores} cores (${machine.cpuModel}), available parallelism ${machine.availableParallelism}, ${machine.totalMemoryMiB} MiB`
}

/** 1, 5 and 15 minute load averages, two decimals: other work on the machine skews every number. */
export function loadAverage(): number[] {
  return os.loadavg().map((n) => Number(n.toFixed(2)))
}
