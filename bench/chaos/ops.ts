import type { Prng } from './prng.js'

export type OpKind = 'rbt' | 'ft' | 'nft'

/** One planned operation; DIDs are indexes into the run's user DID list, FT kinds and NFTs into theirs. */
export interface PlannedOp {
  kind: OpKind
  /** sender DID index (for an NFT: ignored, its current owner sends) */
  from: number
  to: number
  /** RBT: milli-RBT (whole or with a fraction) */
  amountMilli: number
  /** FT: how many units, of which kind */
  ftCount: number
  ftKind: number
  /** NFT: which one */
  nft: number
}

export interface OpWorld {
  /** node index of each user DID */
  didNodes: readonly number[]
  ftKinds: number
  nfts: number
}

/** Shares of the operation kinds and of transfers between two DIDs of the same node. */
export const OP_MIX = { rbt: 0.6, ft: 0.25, sameNode: 0.3, wholeRbt: 0.4 }

/**
 * The next operation of a worker's stream: depends on the PRNG and the world only (never on the
 * ledger's state), so a seed replays the same operations. Whether each one succeeds is up to the
 * network (a sender short of funds gets a refusal, which must change nothing).
 */
export function planOp (rng: Prng, w: OpWorld): PlannedOp {
  const r = rng.next()
  const kind: OpKind = r < OP_MIX.rbt ? 'rbt' : r < OP_MIX.rbt + OP_MIX.ft ? 'ft' : 'nft'
  const n = w.didNodes.length
  const from = rng.int(0, n - 1)
  const sameNode = rng.chance(OP_MIX.sameNode)
  const candidates = w.didNodes.map((node, i) => ({ node, i })).filter((x) => x.i !== from && (x.node === w.didNodes[from]) === sameNode).map((x) => x.i)
  const to = candidates.length > 0 ? rng.pick(candidates) : (from + 1) % n
  // whole RBT (1 to 3), or an amount with a fraction down to 0.001
  const amountMilli = rng.chance(OP_MIX.wholeRbt) ? rng.int(1, 3) * 1000 : rng.int(1, 2999)
  const ftCount = rng.int(1, 12)
  const ftKind = rng.int(0, Math.max(0, w.ftKinds - 1))
  const nft = rng.int(0, Math.max(0, w.nfts - 1))
  return { kind, from, to, amountMilli, ftCount, ftKind, nft }
}
