import type { Prng } from './prng.js'

/**
 * kill: SIGKILL, restarted `downMs` later. pause: SIGSTOP, SIGCONT `downMs` later.
 * isolate: the node's link to the LAN is cut. quorums: a minority of the quorum nodes are cut off
 * together. split: two user nodes (a sender and its receiver, once the quorums signed one of their
 * transfers) stop reaching each other while both still reach everyone else. diskfull: the node's
 * data directory (a small tmpfs) is filled. Every partition and full disk ends `downMs` later.
 */
export type FaultKind = 'kill' | 'pause' | 'isolate' | 'quorums' | 'split' | 'diskfull'

export const PARTITION_KINDS: ReadonlySet<FaultKind> = new Set(['isolate', 'quorums', 'split'])

/** One planned fault: at `atMs` after the start, on `nodes` (indexes into the run's node list; `node` is the first). */
export interface FaultEvent {
  atMs: number
  kind: FaultKind
  node: number
  nodes: number[]
  downMs: number
}

export interface FaultPlanOptions {
  durationMs: number
  /** nodes that may be faulted (indexes into the run's node list) */
  nodes: number
  /** the first `quorums` nodes are quorum nodes, the rest user nodes */
  quorums: number
  /** mean gap between two faults (ms); gaps are uniform in [mean/2, 3·mean/2] */
  meanGapMs: number
  /** share of faults that are pauses rather than kills */
  pauseShare: number
  /** share of faults that are partitions (0 when the nodes do not run on a LAN of namespaces) */
  partitionShare: number
  /** share of faults that fill a disk (0 when no node has its data dir on a tmpfs) */
  diskShare: number
  /** nodes whose data dir is on a tmpfs of its own (may get diskfull faults) */
  diskNodes: number[]
  /** a killed node stays down this long before its restart is started */
  killDownMs: [number, number]
  /** a paused node is resumed this long after its SIGSTOP */
  pauseMs: [number, number]
  /** a partition is healed this long after it started */
  partitionMs: [number, number]
  /** a full disk is freed this long after it was filled */
  diskFullMs: [number, number]
  /** time a restart may take, counted as busy when planning (the node is not faulted again before) */
  restartAllowanceMs: number
  /** at most this many faults under way at a time */
  maxConcurrent: number
  /** no fault starts in the last part of the run (the node would come back after the end) */
  tailMs: number
}

export const DEFAULT_FAULTS: Omit<FaultPlanOptions, 'durationMs' | 'nodes' | 'quorums' | 'diskNodes'> = {
  meanGapMs: 5_000,
  pauseShare: 0.12,
  partitionShare: 0.22,
  diskShare: 0.08,
  killDownMs: [500, 6_000],
  pauseMs: [1_500, 6_000],
  partitionMs: [2_000, 12_000],
  diskFullMs: [2_000, 10_000],
  restartAllowanceMs: 10_000,
  maxConcurrent: 3,
  tailMs: 5_000
}

/** How long a fault keeps its nodes busy in the plan. */
export function busyMs (f: Pick<FaultEvent, 'kind' | 'downMs'>, o: Pick<FaultPlanOptions, 'restartAllowanceMs'>): number {
  return f.downMs + (f.kind === 'kill' ? o.restartAllowanceMs : 0)
}

/**
 * The fault schedule of a run, from the PRNG alone: the same seed and options give the same list.
 * Faults never overlap on one node and at most `maxConcurrent` faults are under way at once (a
 * fault whose draw would break that is moved to the next free instant, not dropped). Partitions
 * cut at most a minority of the quorum nodes (1 to ⌊(q−1)/2⌋); a split needs two user nodes.
 */
export function planFaults (rng: Prng, o: FaultPlanOptions): FaultEvent[] {
  const out: FaultEvent[] = []
  const busyUntil = new Array<number>(o.nodes).fill(0)
  const ends: number[] = []
  const users = Array.from({ length: o.nodes - o.quorums }, (_, i) => o.quorums + i)
  const diskShare = o.diskNodes.length > 0 ? o.diskShare : 0
  const partitionShare = o.quorums >= 3 && users.length >= 2 ? o.partitionShare : 0
  let t = 0
  for (;;) {
    t += rng.int(Math.floor(o.meanGapMs / 2), Math.floor(o.meanGapMs * 3 / 2))
    const r = rng.next()
    let kind: FaultKind = r < o.pauseShare ? 'pause' : r < o.pauseShare + partitionShare ? 'isolate' : r < o.pauseShare + partitionShare + diskShare ? 'diskfull' : 'kill'
    if (kind === 'isolate') kind = rng.pick(['isolate', 'quorums', 'split'] as const)
    const range = kind === 'kill' ? o.killDownMs : kind === 'pause' ? o.pauseMs : kind === 'diskfull' ? o.diskFullMs : o.partitionMs
    const downMs = rng.int(range[0], range[1])
    // the nodes drawn: the first is moved on to a free one at the planned instant
    const draw = kind === 'diskfull' ? rng.pick(o.diskNodes) : kind === 'quorums' ? rng.int(0, o.quorums - 1) : kind === 'split' ? rng.pick(users) : rng.int(0, o.nodes - 1)
    const width = kind === 'quorums' ? rng.int(1, Math.floor((o.quorums - 1) / 2)) : kind === 'split' ? 2 : 1
    const pool = kind === 'diskfull' ? o.diskNodes : kind === 'quorums' ? Array.from({ length: o.quorums }, (_, i) => i) : kind === 'split' ? users : Array.from({ length: o.nodes }, (_, i) => i)
    const start = pool.indexOf(draw)
    let nodes: number[] = []
    // the earliest instant ≥ t with a free slot and enough free nodes of the pool
    for (;;) {
      const free = pool.map((_, k) => pool[(start + k) % pool.length]!).filter((n) => busyUntil[n]! <= t)
      if (ends.filter((e) => e > t).length < o.maxConcurrent && free.length >= width) { nodes = free.slice(0, width); break }
      const later = [...busyUntil, ...ends].filter((u) => u > t)
      t = Math.min(...later)
    }
    if (t > o.durationMs - o.tailMs) break
    const ev: FaultEvent = { atMs: t, kind, node: nodes[0]!, nodes, downMs }
    for (const n of nodes) busyUntil[n] = t + busyMs(ev, o)
    ends.push(t + busyMs(ev, o))
    out.push(ev)
  }
  return out
}
