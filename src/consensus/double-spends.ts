import { decodeBlockEnvelope, peekBlockEnvelope, tokenEntry } from '../tokenchain/block.js'
import { sha3Hex } from '../tokenchain/hash.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import { OWNER_ONLY, spendAnchor } from '../tokenchain/validate.js'
import { errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import { notify, type ConsensusObserver } from './observe.js'
import type { Clock, Ledger, SpentMarker } from './ports.js'
import { b64 } from './records.js'

/**
 * Double spends seen after the fact (docs/protocol.md, "Double spends seen"): two valid blocks
 * spending one token state, or two verified spent markers naming different transactions for one
 * state, or (certificate-evidence.ts) grants of one state held by two transactions. Whatever let them through (arbiters that granted twice, a network cut longer than the
 * forget time, quorums that lied), the node that sees both keeps them as the proof, counts it
 * (metric), says it (a WARN line) and serves it (`GET /svc/v1/double-spends`).
 */

/** Where a node saw the two spends. */
export type DoubleSpendSeenBy = 'receiver' | 'quorum' | 'sync' | 'markers' | 'sender'

export interface DoubleSpendProof {
  /** SHA3 of the state and the two spenders, sorted: the same pair seen twice is one record */
  id: string
  tokenId: string
  /** the state spent twice: `tokenId@blockId` of its last quorum-signed block */
  state: string
  stateHash: string
  kind: 'blocks' | 'markers' | 'certificates'
  /** the two spenders: a transaction id (a burn: its block hash) */
  spenders: [string, string]
  /** kind 'blocks': the two spending blocks, base64 envelopes (each carries its own signatures) */
  blocks?: [string, string]
  /** kind 'markers': the two markers (each signed by its quorum over the state) */
  markers?: [SpentMarker & { sig?: string, batch?: true }, SpentMarker & { sig?: string, batch?: true }]
  /** kind 'certificates' (certificate-evidence.ts): the grants of the state seen for each transaction */
  certificates?: [CertificateSide, CertificateSide]
  /** kind 'certificates': the arbiters that granted both transactions */
  grantedTwice?: string[]
  /** kind 'certificates': those of them this node stopped trusting (both of their grants final) */
  distrusted?: string[]
  seenBy: DoubleSpendSeenBy
  at: number
}

/**
 * A grant or a seal kept as evidence of conflicting certificates (certificate-evidence.ts): the
 * arbiter's peer id and signature, `txid` the transaction holding the states it names; a grant
 * also names the claim (quorum, nonce, the transaction claimed for), a seal (`seal`) nothing more
 * (its arbiter signed peerSealBytes with `txid` as the holder). `final` when it checked as final
 * (a seal: no release undoes it).
 */
export interface KeptGrant { peer: string, sig: string, txid: string, states: string[], quorum?: string, nonce?: string, forTx?: string, seal?: true, final?: true }

/** One side of conflicting certificates: the transaction holding the state, the arbiters whose grants of it were seen, and those grants (as many as fit). */
export interface CertificateSide { txid: string, arbiters: string[], grants: KeptGrant[] }

/** What the consensus roles hand a double spend they saw to. */
export interface DoubleSpendSink {
  flag: (proof: Omit<DoubleSpendProof, 'id' | 'at'>) => Promise<void>
}

/** The collection the proofs are kept in. */
export const DOUBLE_SPENDS = 'cs-double-spends'
const COLLECTION = DOUBLE_SPENDS

/** A spend's name: its transaction id, or a burn's block hash. */
function spenderOf (block: Uint8Array): string {
  const b = decodeBlockEnvelope(block)
  return b.content.transInfo.tid ?? b.hash
}

/**
 * Two chains of one token that both spend one state: the chains agree up to some block, then each
 * goes on with a different block, and past any owner-only blocks ("04", "06", "11": they spend
 * nothing) each has a spending block. Undefined when one chain extends the other, when they share
 * no block, or when a side lacks the blocks to tell (a sparse stored chain). Both chains are taken
 * as validated by the caller.
 */
export function forkOf (tokenId: string, mine: ReadonlyArray<Uint8Array | undefined>, theirs: ReadonlyArray<Uint8Array | undefined>): { state: string, blocks: [Uint8Array, Uint8Array] } | undefined {
  const n = Math.min(mine.length, theirs.length)
  let i = 0
  for (; i < n; i++) {
    const a = mine[i]
    const b = theirs[i]
    if (a === undefined || b === undefined) continue
    if (peekBlockEnvelope(a).hash !== peekBlockEnvelope(b).hash) break
  }
  if (i === 0 || i >= n) return undefined
  const prevA = tokenEntry(decodeBlockEnvelope(mine[i]!), tokenId)?.previousBlockId
  const prevB = tokenEntry(decodeBlockEnvelope(theirs[i]!), tokenId)?.previousBlockId
  if (prevA === undefined || prevA !== prevB) return undefined
  const full = [mine, theirs].find((c) => c.slice(0, i).every((x) => x !== undefined))
  if (full === undefined) return undefined
  const spendAt = (c: ReadonlyArray<Uint8Array | undefined>): Uint8Array | undefined => {
    for (let j = i; j < c.length; j++) {
      const x = c[j]
      if (x === undefined) return undefined
      if (!OWNER_ONLY.has(decodeBlockEnvelope(x).content.transactionType)) return x
    }
    return undefined
  }
  const a = spendAt(mine)
  const b = spendAt(theirs)
  if (a === undefined || b === undefined) return undefined
  return { state: `${tokenId}@${spendAnchor(full as Uint8Array[], i - 1)}`, blocks: [a, b] }
}

/** The proof of a fork found by forkOf, ready to flag. */
export function forkProof (tokenId: string, mine: ReadonlyArray<Uint8Array | undefined>, theirs: ReadonlyArray<Uint8Array | undefined>, seenBy: DoubleSpendSeenBy): Omit<DoubleSpendProof, 'id' | 'at'> | undefined {
  const f = forkOf(tokenId, mine, theirs)
  if (f === undefined) return undefined
  const blockId = f.state.slice(f.state.indexOf('@') + 1)
  return {
    tokenId, state: f.state, stateHash: tokenStateHash(tokenId, blockId), kind: 'blocks',
    spenders: [spenderOf(f.blocks[0]), spenderOf(f.blocks[1])], blocks: [b64(f.blocks[0]), b64(f.blocks[1])], seenBy
  }
}

/** The double spends a node saw, kept in its ledger (`cs-double-spends/<id>`). */
export class DoubleSpends implements DoubleSpendSink {
  constructor (private readonly opts: { ledger: Pick<Ledger, 'record' | 'records' | 'commit'>, log: Logger, clock: Clock, observe?: ConsensusObserver }) {}

  /** Keeps the proof (once per state and pair of spenders), counts it and says it. Never throws. */
  async flag (p: Omit<DoubleSpendProof, 'id' | 'at'>): Promise<void> {
    try {
      const id = sha3Hex(new TextEncoder().encode(`${p.stateHash}|${[...p.spenders].sort().join('|')}`))
      if (await this.opts.ledger.record(COLLECTION, id) !== undefined) return
      const proof: DoubleSpendProof = { id, ...p, at: this.opts.clock.now() }
      await this.opts.ledger.commit((w) => { w.putRecord(COLLECTION, id, proof) })
      notify(this.opts.observe, { kind: 'double-spend', seenBy: p.seenBy, evidence: p.kind })
      this.opts.log.warn(`double spend: token ${p.tokenId} state ${p.state} spent by ${p.spenders[0]} and by ${p.spenders[1]} (${p.kind}, seen by this node's ${p.seenBy}); proof kept as ${id}`)
    } catch (e) {
      this.opts.log.warn(`double spend of ${p.tokenId} seen, but its proof could not be kept: ${errorMessage(e)}`)
    }
  }

  /** The proofs kept, newest first, at most `limit`; of one token when `tokenId` is given. */
  async list (opts: { tokenId?: string, limit?: number } = {}): Promise<DoubleSpendProof[]> {
    const out: DoubleSpendProof[] = []
    for await (const [, p] of this.opts.ledger.records<DoubleSpendProof>(COLLECTION)) {
      if (opts.tokenId === undefined || p.tokenId === opts.tokenId) out.push(p)
    }
    return out.sort((a, b) => b.at - a.at).slice(0, opts.limit ?? 100)
  }
}

/**
 * The chains a validation found diverging from a state validated here (AncestryMemory.diverged),
 * each compared with the chain this node stores: a fork with a spend on both sides is flagged.
 * Resolves once the stored chains are read (the caller may then overwrite them); the comparison
 * and the flag run in the background. Never throws.
 */
export async function flagDiverged (diverged: ReadonlyMap<string, readonly Uint8Array[]> | undefined, ledger: Pick<Ledger, 'chain'>, sink: DoubleSpendSink | undefined, seenBy: DoubleSpendSeenBy, log: Logger): Promise<void> {
  if (sink === undefined || diverged === undefined || diverged.size === 0) return
  const todo = [...diverged]
  const stored = await Promise.all(todo.map(async ([tokenId]) => await ledger.chain(tokenId).catch(() => [] as Uint8Array[])))
  void (async () => {
    for (const [i, [tokenId, sent]] of todo.entries()) {
      const p = forkProof(tokenId, stored[i]!, sent, seenBy)
      if (p !== undefined) await sink.flag(p)
    }
  })().catch((e: unknown) => { log.debug(`comparing diverging chains: ${errorMessage(e)}`) })
}
