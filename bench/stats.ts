import { readdirSync, readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
/** Small helpers for benchmark figures. */
export function percentile (values: number[], p: number): number {
  if (values.length === 0) return NaN
  const s = [...values].sort((a, b) => a - b)
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))
  return s[i]
}
export const median = (v: number[]): number => percentile(v, 50)
export const ms = (v: number): string => `${v.toFixed(1)} ms`
export function isMain (metaUrl: string): boolean {
  return process.argv[1] !== undefined && metaUrl === new URL(`file://${process.argv[1]}`).href
}

/**
 * User + system CPU time (ms) the kernel has charged to a process, split between its main thread,
 * where JavaScript runs, and its other threads (V8's optimising compiler and GC helpers, libuv's
 * pool with LevelDB's work). Undefined where /proc is not available (not Linux) or the process is
 * gone. Threads that already exited are not counted.
 */
export function processThreadCpuMs (pid: number | undefined): { main: number, other: number } | undefined {
  if (pid === undefined) return undefined
  let tids: string[]
  try { tids = readdirSync(`/proc/${pid}/task`) } catch { return undefined }
  let main = 0
  let other = 0
  for (const tid of tids) {
    const v = statCpuMs(`/proc/${pid}/task/${tid}/stat`)
    if (v === undefined) continue
    if (tid === String(pid)) main += v
    else other += v
  }
  return { main, other }
}

/**
 * Waits until the processes `pids` are idle: together they use less than `maxCpuMs` of CPU over
 * `windowMs` (polled on /proc), or `deadlineMs` passed. Returns the ms waited. A benchmark that
 * times one operation calls it first, so the work left over from the operation before (gossip
 * rounds, background refills, record stores) is not counted in the one timed.
 */
export async function settled (pids: Array<number | undefined>, opts: { windowMs?: number, maxCpuMs?: number, deadlineMs?: number } = {}): Promise<number> {
  const windowMs = opts.windowMs ?? 250
  const maxCpuMs = opts.maxCpuMs ?? 25
  const started = performance.now()
  const total = (): number => pids.reduce<number>((sum, pid) => sum + (pid === undefined ? 0 : statCpuMs(`/proc/${pid}/stat`) ?? 0), 0)
  let before = total()
  while (performance.now() - started < (opts.deadlineMs ?? 10_000)) {
    await new Promise((resolve) => setTimeout(resolve, windowMs))
    const now = total()
    if (now - before < maxCpuMs) break
    before = now
  }
  return performance.now() - started
}

function statCpuMs (path: string): number | undefined {
  try {
    const stat = readFileSync(path, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12])
    return Number.isFinite(ticks) ? ticks * 1000 / CLOCK_TICKS : undefined
  } catch { return undefined }
}
/**
 * User + system CPU time (ms) of this process's children that have exited and been waited for
 * (cutime + cstime of /proc/self/stat); undefined off Linux.
 */
export function childrenCpuMs (): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[13]) + Number(fields[14])
    return Number.isFinite(ticks) ? ticks * 1000 / CLOCK_TICKS : undefined
  } catch { return undefined }
}

/** The 1-minute load average, for printing next to wall-clock figures on a shared host. */
export function loadAverage (): string {
  return loadavg().map((v) => v.toFixed(2)).join(' ')
}
/** Linux reports process times in clock ticks of 1/100 s (USER_HZ) on every common platform. */
const CLOCK_TICKS = 100
