import type { Prng } from './prng.js'

export type FaultKind = 'kill' | 'pause'

/** One planned fault: at `atMs` after the start, node `node` is SIGKILLed (restarted `downMs` later) or SIGSTOPped (SIGCONT `downMs` later). */
export interface FaultEvent {
  atMs: number
  kind: FaultKind
  node: number
  downMs: number
}

export interface FaultPlanOptions {
  durationMs: number
  /** nodes that may be faulted (indexes into the run's node list) */
  nodes: number
  /** mean gap between two faults (ms); gaps are uniform in [mean/2, 3·mean/2] */
  meanGapMs: number
  /** share of faults that are pauses rather than kills */
  pauseShare: number
  /** a killed node stays down this long before its restart is started */
  killDownMs: [number, number]
  /** a paused node is resumed this long after its SIGSTOP */
  pauseMs: [number, number]
  /** time a restart may take, counted as busy when planning (the node is not faulted again before) */
  restartAllowanceMs: number
  /** at most this many nodes faulted (down, restarting or paused) at a time */
  maxConcurrent: number
  /** no fault starts in the last part of the run (the node would come back after the end) */
  tailMs: number
}

export const DEFAULT_FAULTS: Omit<FaultPlanOptions, 'durationMs' | 'nodes'> = {
  meanGapMs: 6_000,
  pauseShare: 0.2,
  killDownMs: [500, 6_000],
  pauseMs: [1_500, 6_000],
  restartAllowanceMs: 12_000,
  maxConcurrent: 2,
  tailMs: 5_000
}

/**
 * The fault schedule of a run, from the PRNG alone: the same seed and options give the same list.
 * Faults never overlap on one node and at most `maxConcurrent` nodes are faulted at once (a fault
 * whose draw would break that is moved to the next free instant, not dropped).
 */
export function planFaults (rng: Prng, o: FaultPlanOptions): FaultEvent[] {
  const out: FaultEvent[] = []
  const busyUntil = new Array<number>(o.nodes).fill(0)
  let t = 0
  for (;;) {
    t += rng.int(Math.floor(o.meanGapMs / 2), Math.floor(o.meanGapMs * 3 / 2))
    const kind: FaultKind = rng.chance(o.pauseShare) ? 'pause' : 'kill'
    const downMs = kind === 'kill' ? rng.int(o.killDownMs[0], o.killDownMs[1]) : rng.int(o.pauseMs[0], o.pauseMs[1])
    const draw = rng.int(0, o.nodes - 1)
    // the earliest instant ≥ t with fewer than maxConcurrent busy nodes and a free node
    for (;;) {
      const busy = busyUntil.filter((u) => u > t).length
      if (busy < o.maxConcurrent && busyUntil.some((u) => u <= t)) break
      t = Math.min(...busyUntil.filter((u) => u > t))
    }
    if (t > o.durationMs - o.tailMs) break
    // the drawn node, or the next free one after it
    let node = draw
    while (busyUntil[node]! > t) node = (node + 1) % o.nodes
    busyUntil[node] = t + downMs + (kind === 'kill' ? o.restartAllowanceMs : 0)
    out.push({ atMs: t, kind, node, downMs })
  }
  return out
}
