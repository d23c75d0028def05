import { readFileSync } from 'node:fs'

/** A process's resident set size in bytes (VmRSS of /proc/<pid>/status), or undefined when it is gone. */
export function rssOf (pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m === null ? undefined : Number(m[1]) * 1024
  } catch { return undefined }
}

/**
 * Polls the RSS of some processes (every `intervalMs`) and tells, per phase, how far each rose
 * above its RSS at the start of the phase (peak − start, bytes).
 */
export class RssWatch {
  private start: number[]
  private peak: number[]
  private readonly timer: NodeJS.Timeout

  constructor (private readonly pids: number[], intervalMs = 50) {
    this.start = pids.map((p) => rssOf(p) ?? 0)
    this.peak = [...this.start]
    this.timer = setInterval(() => { this.sample() }, intervalMs)
  }

  private sample (): void {
    this.pids.forEach((p, i) => { this.peak[i] = Math.max(this.peak[i], rssOf(p) ?? 0) })
  }

  /** The growth of each process since the phase began; the next phase starts now. */
  phase (): number[] {
    this.sample()
    const growth = this.peak.map((p, i) => Math.max(0, p - this.start[i]))
    this.start = this.pids.map((p) => rssOf(p) ?? 0)
    this.peak = [...this.start]
    return growth
  }

  stop (): void { clearInterval(this.timer) }
}
