import { BURN_PROOF_MAX_BLOCKS, type ClaimAuth, type SealConsent } from '../../consensus/claim-proofs.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import type { RpcHandlers, UnarySpec } from '../../p2p/rpc.js'

/**
 * The claims' rpc methods (docs/protocol.md, "Claims") and the shape checks every request passes
 * before anything else runs. Every claim carries its proof (the sender's contract, the quorum's
 * signed nonce); a release and a `released` answer carry the quorum's signature over that nonce;
 * every grant comes back signed by the arbiter's DID.
 */
export interface ClaimItem {
  txid: string
  stateHash: string
  via?: string
  /** one claimant (a checker's claim, from before the sender's claim): its quorum, and the index of its proof in `proofs` */
  quorum?: string
  p?: number
  /** the claimants of the state (the sender's claim for its signers): indexes of their proofs in `proofs`, each proof naming its quorum */
  ps?: number[]
  /** with `via` only: the burn that spent the state, as checkBurnProof takes it (block envelopes, hex) */
  burn?: string[]
  /** a state before the contract's tip (an owner-only tip): the blocks from it to the tip, as checkAnchorPath takes them (senders from before `pb`) */
  path?: string[]
  /** the blocks showing the state is the contract sender's (its block, then any owner-only blocks up to the tip): indexes into the request's `blocks` */
  pb?: number[]
}
/**
 * A claim's proof on the wire: the contract is left out once the arbiter has checked it for this
 * claim (its later requests name the claim by nonce and signature); an arbiter that no longer
 * knows it answers UNAUTHORIZED with `details.proofUnknown`, and the checker sends it again.
 */
export type WireProof = Omit<ClaimAuth, 'contract'> & {
  contract?: Uint8Array
  /** the claimant quorum (with `ps` items) */
  quorum?: string
  /** the contract is that of proof `cp` of this request (the sender's claim shows it once for five quorums) */
  cp?: number
  /** the peer that answers for the claimant quorum (asked how its claim ended); the asker when absent */
  peer?: string
}
export interface StateClaimMethods {
  /**
   * claims states for transactions: one answer per item, in order; `closer` peer ids whose addresses
   * are in `addrs`; `via`: the transaction a state is claimed for when its spender `txid` is another
   * (a part token's burnt ancestor, spent by its burn block); `grants`: the arbiter DID's signatures,
   * each over the items it lists (grantDigest)
   */
  'claims.claim': UnarySpec<{ items: ClaimItem[], proofs: WireProof[], blocks?: Uint8Array[] }, {
    answers: Array<{ granted: boolean, holder?: string, spent?: boolean, closer: string[] }>
    addrs: Record<string, string[]>
    /** the arbiter's grants, each signed with its peer key over the items it lists for the claimant of proof `p` (peerGrantBytes; signature hex) */
    pgrants?: Array<{ items: number[], p: number, sig: string }>
  }>
  /** the claimant quorum gives its claim `nonce` of `txid` up (its vote was released before signing), signed */
  'claims.release': UnarySpec<{ txid: string, quorum: string, nonce: string, sig: string, stateHashes: string[] }, { freed: number }>
  /**
   * seals states for transaction `txid` (docs/protocol.md, "Seals"): each item's state is spent by
   * `holder` (the transaction, or a burnt ancestor's burn block) for good; `consents`, the signers'
   * secrets behind their claim nonces. One answer per item, in order; `seals`: the arbiter's
   * peer-key signatures, each over the items it lists of one holder (peerSealBytes; signature hex)
   */
  'claims.seal': UnarySpec<{ txid: string, items: Array<{ stateHash: string, holder: string }>, consents: SealConsent[] }, {
    answers: Array<{ sealed: boolean, holder?: string, committed?: boolean, why?: string }>
    seals?: Array<{ holder: string, items: number[], sig: string }>
  }>
  /** an arbiter asks a claimant how the claim's transaction ended for its quorum; `released` comes signed over the nonce */
  'claims.status': UnarySpec<{ txid: string, quorum: string, nonce?: string }, { outcome: 'pending' | 'committed' | 'released', sig?: string }>
}

/** What one peer may ask of an arbiter: claim items (and released states) a second, and at once. */
export const CLAIM_PEER_RATE = 256
export const CLAIM_PEER_BURST = 1024

/**
 * Calls an arbiter again while it answers that this node is past its budget (TOO_MANY_REQUESTS):
 * first after the budget has had time to refill for the `units` states asked, then after twice as
 * long each time, until `untilMs` (then its refusal stands). A check of more states than the burst
 * is paced by the arbiter's own answers instead of counted as unanswered; an arbiter that refuses
 * everything is asked again a few times, not every few milliseconds with the whole request (a
 * claim's first carries its contract).
 */
export async function withinBudget<T> (call: () => Promise<T>, units: number, untilMs: number, now: () => number = Date.now): Promise<T> {
  let wait = Math.ceil(units / CLAIM_PEER_RATE * 1000) + 25
  for (;;) {
    try {
      return await call()
    } catch (e) {
      if (!(e instanceof RbtError) || e.code !== ErrorCode.TOO_MANY_REQUESTS) throw e
      if (now() + wait > untilMs) throw e
      await new Promise((resolve) => setTimeout(resolve, wait))
      wait *= 2
    }
  }
}
/** How long a check paces its batches to an arbiter's budget, at most. */
export const BUDGET_WAIT_MS = 30_000

/**
 * Until when a check of `units` states at one arbiter paces its batches to that arbiter's budget:
 * the call's own timeout, and twice the time the arbiter's rate takes to pass them (at most
 * BUDGET_WAIT_MS). An arbiter that answers TOO_MANY_REQUESTS to everything, at once, then holds a
 * small check no longer than one that does not answer at all; a check of many states gets the time
 * its pace needs.
 */
export const budgetDeadline = (units: number, timeoutMs: number, now: number = Date.now()): number =>
  now + Math.min(BUDGET_WAIT_MS, timeoutMs + 2 * Math.ceil(Math.max(0, units) / CLAIM_PEER_RATE * 1000))

/** Most items of one `claims.claim`, and most states of one `claims.release`. */
export const CLAIM_BATCH_MAX = 64
export const RELEASE_MAX = 1024
/** Most proofs in one `claims.claim`, and the largest contract one may carry (a contract of many tokens is some 100 bytes a token). */
export const PROOFS_MAX = 8
const CONTRACT_MAX_BYTES = 768 * 1024

const STATE_RE = /^Qm[1-9A-HJ-NP-Za-km-z]{44}$/
export const TXID_RE = /^[0-9a-f]{64}$/
const HEX_RE = /^[0-9a-fA-F]{1,1024}$/
const NONCE_RE = /^[0-9a-f]{32}$/
const PEER_RE = /^[1-9A-HJ-NP-Za-km-z]{32,128}$/
/** Largest block envelope of a burn proof, in hex characters. */
const BURN_BLOCK_MAX_HEX = 128 * 1024

export function needClaimRequest (req: unknown): asserts req is StateClaimMethods['claims.claim']['request'] {
  const r = req as { items?: unknown, proofs?: unknown } | undefined
  const items = r?.items
  const proofs = r?.proofs
  if (!Array.isArray(items) || items.length === 0 || items.length > CLAIM_BATCH_MAX) throw new RbtError(ErrorCode.INVALID_INPUT, `malformed claim request: items must list 1 to ${CLAIM_BATCH_MAX} states`)
  if (!Array.isArray(proofs) || proofs.length === 0 || proofs.length > PROOFS_MAX) throw new RbtError(ErrorCode.UNAUTHORIZED, 'a claim is refused without its proof (the sender\'s contract and the quorum\'s signed claim): this arbiter serves signed claims only')
  for (const p of proofs as unknown[]) {
    const a = p as Partial<WireProof> | undefined
    if (a === undefined || a === null || (a.contract !== undefined && (!(a.contract instanceof Uint8Array) || a.contract.length > CONTRACT_MAX_BYTES)) || typeof a.nonce !== 'string' || !NONCE_RE.test(a.nonce) || typeof a.sig !== 'string' || !HEX_RE.test(a.sig) ||
      (a.quorum !== undefined && (typeof a.quorum !== 'string' || a.quorum.length > 128)) || (a.peer !== undefined && (typeof a.peer !== 'string' || !PEER_RE.test(a.peer))) ||
      (a.cp !== undefined && (typeof a.cp !== 'number' || !Number.isInteger(a.cp) || a.cp < 0 || a.cp >= proofs.length))) {
      throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed claim proof: a contract, a nonce and a signature')
    }
  }
  const blocks = (r as { blocks?: unknown }).blocks
  if (blocks !== undefined && (!Array.isArray(blocks) || blocks.length > CLAIM_BATCH_MAX * BURN_PROOF_MAX_BLOCKS || !blocks.every((b) => b instanceof Uint8Array && b.length > 0 && b.length <= CONTRACT_MAX_BYTES))) {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed claim request: `blocks` is a list of block envelopes')
  }
  const nBlocks = Array.isArray(blocks) ? blocks.length : 0
  const idx = (x: unknown): boolean => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x < proofs.length
  for (const it of items as unknown[]) {
    const i = it as { txid?: unknown, quorum?: unknown, stateHash?: unknown, via?: unknown, p?: unknown, ps?: unknown, burn?: unknown, path?: unknown } | undefined
    // one claimant named on the item (quorum and p), or several by their proofs (ps), each proof naming its quorum
    const one = typeof i?.quorum === 'string' && i.quorum.length <= 128 && idx(i.p) && i.ps === undefined
    const many = i?.quorum === undefined && i?.p === undefined && Array.isArray(i?.ps) && i.ps.length > 0 && i.ps.length <= PROOFS_MAX && i.ps.every(idx) &&
      i.ps.every((k: number) => typeof (proofs[k] as WireProof).quorum === 'string')
    if (typeof i?.txid !== 'string' || !TXID_RE.test(i.txid) || typeof i.stateHash !== 'string' || !STATE_RE.test(i.stateHash) ||
      (i.via !== undefined && (typeof i.via !== 'string' || !TXID_RE.test(i.via))) || (!one && !many)) {
      throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed claim request: each item needs a txid, a state hash and its claimants (a quorum DID and its proof)')
    }
    if (i.burn !== undefined && (i.via === undefined || !Array.isArray(i.burn) || i.burn.length > BURN_PROOF_MAX_BLOCKS || !i.burn.every((h) => typeof h === 'string' && h.length <= BURN_BLOCK_MAX_HEX && /^(?:[0-9a-f]{2})*$/.test(h)))) {
      throw new RbtError(ErrorCode.INVALID_INPUT, `malformed claim request: a burn proof is up to ${BURN_PROOF_MAX_BLOCKS} block envelopes (hex), with \`via\` only`)
    }
    const pb = (it as { pb?: unknown }).pb
    if (pb !== undefined && (i.via !== undefined || i.path !== undefined || !Array.isArray(pb) || pb.length === 0 || pb.length > BURN_PROOF_MAX_BLOCKS || !pb.every((k) => Number.isInteger(k) && k >= 0 && k < nBlocks))) {
      throw new RbtError(ErrorCode.INVALID_INPUT, `malformed claim request: \`pb\` names up to ${BURN_PROOF_MAX_BLOCKS} of the request's blocks, without \`via\` or \`path\``)
    }
    if (i.path !== undefined && (i.via !== undefined || !Array.isArray(i.path) || i.path.length > BURN_PROOF_MAX_BLOCKS || !i.path.every((h) => typeof h === 'string' && h.length <= BURN_BLOCK_MAX_HEX && /^(?:[0-9a-f]{2})*$/.test(h)))) {
      throw new RbtError(ErrorCode.INVALID_INPUT, `malformed claim request: a path is up to ${BURN_PROOF_MAX_BLOCKS} block envelopes (hex), without \`via\``)
    }
  }
}

export function needReleaseRequest (req: unknown): asserts req is StateClaimMethods['claims.release']['request'] {
  const r = req as Partial<StateClaimMethods['claims.release']['request']> | undefined
  if (typeof r?.txid !== 'string' || !TXID_RE.test(r.txid) || typeof r.quorum !== 'string' || r.quorum.length > 128 || typeof r.nonce !== 'string' || !NONCE_RE.test(r.nonce) ||
    typeof r.sig !== 'string' || !HEX_RE.test(r.sig) || !Array.isArray(r.stateHashes) || r.stateHashes.length > RELEASE_MAX || !r.stateHashes.every((h) => typeof h === 'string' && STATE_RE.test(h))) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `malformed claim release: a txid, the quorum, the claim's nonce, the quorum's signature and up to ${RELEASE_MAX} state hashes`)
  }
}

/** Most consents one `claims.seal` may show (five signers, and those they replaced). */
export const SEAL_CONSENTS_MAX = 16

export function needSealRequest (req: unknown): asserts req is StateClaimMethods['claims.seal']['request'] {
  const r = req as Partial<StateClaimMethods['claims.seal']['request']> | undefined
  if (typeof r?.txid !== 'string' || !TXID_RE.test(r.txid) || !Array.isArray(r.items) || r.items.length === 0 || r.items.length > CLAIM_BATCH_MAX ||
    !r.items.every((it) => typeof it?.stateHash === 'string' && STATE_RE.test(it.stateHash) && typeof it.holder === 'string' && TXID_RE.test(it.holder)) ||
    !Array.isArray(r.consents) || r.consents.length > SEAL_CONSENTS_MAX ||
    !r.consents.every((c) => typeof c?.quorum === 'string' && c.quorum.length <= 128 && typeof c.nonce === 'string' && NONCE_RE.test(c.nonce) && typeof c.secret === 'string' && NONCE_RE.test(c.secret))) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `malformed seal request: a txid, 1 to ${CLAIM_BATCH_MAX} states each with its holder, and up to ${SEAL_CONSENTS_MAX} consents (quorum, nonce, secret)`)
  }
}

/** What the node's claims serve to peers. */
export interface ClaimServer {
  serveClaim: (req: StateClaimMethods['claims.claim']['request'], asker: string) => Promise<StateClaimMethods['claims.claim']['response']>
  serveRelease: (req: StateClaimMethods['claims.release']['request'], asker: string) => Promise<{ freed: number }>
  serveSeal: (req: StateClaimMethods['claims.seal']['request'], asker: string) => Promise<StateClaimMethods['claims.seal']['response']>
}

/** How a claimant answers an arbiter's status question (the quorum's outcome, `released` signed). */
export type ClaimStatusAnswer = (quorum: string, txid: string, nonce: string | undefined, asker?: string) => Promise<StateClaimMethods['claims.status']['response']>

export function stateClaimRpcHandlers (claims: () => ClaimServer | undefined, status: () => ClaimStatusAnswer | undefined): RpcHandlers<StateClaimMethods> {
  const svc = (): ClaimServer => {
    const c = claims()
    if (c === undefined) throw new RbtError(ErrorCode.PEER_UNREACHABLE, 'claims are not served yet')
    return c
  }
  return {
    'claims.claim': async (req, ctx) => { needClaimRequest(req); return await svc().serveClaim(req, ctx.peerId) },
    'claims.release': async (req, ctx) => { needReleaseRequest(req); return await svc().serveRelease(req, ctx.peerId) },
    'claims.seal': async (req, ctx) => { needSealRequest(req); return await svc().serveSeal(req, ctx.peerId) },
    'claims.status': async (req, ctx) => {
      if (typeof req?.txid !== 'string' || !TXID_RE.test(req.txid) || typeof req.quorum !== 'string' || req.quorum.length > 128 || (req.nonce !== undefined && (typeof req.nonce !== 'string' || !NONCE_RE.test(req.nonce)))) {
        throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed claim status request')
      }
      const o = status()
      if (o === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'consensus is not running')
      return await o(req.quorum, req.txid, req.nonce, ctx.peerId)
    }
  }
}
