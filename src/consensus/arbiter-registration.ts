import { sha3Hex } from '../tokenchain/hash.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import { TokenType } from '../tokenchain/types.js'
import { COMMITTEE_MIN } from './committee.js'

/**
 * Arbiter registrations: how a DID takes a seat among the arbiters of the claims, with a stake of
 * whole RBT tokens (docs/protocol.md, "The arbiter committee"; docs/decisions/0028-arbiter-committee.md).
 *
 * A registration names the DID, the peer that answers for it (the arbiter as the claims count it:
 * grants and seals are signed with that peer's key) and the staked tokens at their latest block.
 * It is signed twice: by the DID (it stakes its own tokens) and by the peer (it agrees to stand for
 * that DID, so nobody can seat a peer of someone else). Every node checks a registration the same
 * way from what it carries (the staked tokens' chains) and from the arbiters of the staked states
 * (a stake spent since does not count), and counts the same committee once registrations are older
 * than the maturity delay. Peer ids cost nothing; seats cost a stake each.
 */

/** Whole RBT tokens one seat stakes. */
export const ARBITER_STAKE_RBT = 1
/** Most tokens one registration names. */
export const ARBITER_STAKE_MAX_TOKENS = 16
/** How far ahead of this node's clock a registration's time may be. */
export const ARBITER_CLOCK_SKEW_MS = 60_000

export interface StakedToken {
  token: string
  /** the token's latest block id when staked (`<number>-<hash>`) */
  block: string
}

export interface ArbiterRegistration {
  v: 1
  did: string
  peer: string
  stake: StakedToken[]
  /** when it was made (ms since the epoch, the registrant's clock); a later one of the same DID replaces it */
  at: number
  /** the DID leaves the committee (its stake is free once this counts) */
  leave?: true
  /** the DID's key signature over registrationDigest */
  sig: string
  /** the peer's identity-key signature over the digest's bytes (hex) */
  peerSig: string
}

const PEER_RE = /^(12D3Koo|Qm)[1-9A-HJ-NP-Za-km-z]{38,60}$/
const DID_RE = /^bafybmi[a-z2-7]{52}$/
const TOKEN_RE = /^Qm[1-9A-HJ-NP-Za-km-z]{44}$/
const BLOCK_RE = /^\d{1,9}-[0-9a-f]{64}$/
const HEX_RE = /^[0-9a-fA-F]{2,1024}$/

/** What both signatures cover: every field but the signatures, in a fixed order. */
export function registrationDigest (r: Omit<ArbiterRegistration, 'sig' | 'peerSig'>): string {
  const stake = r.stake.map((s) => `${s.token}@${s.block}`).join(',')
  return sha3Hex(new TextEncoder().encode(['rbt-arbiter/1', r.did, r.peer, stake, String(r.at), r.leave === true ? 'leave' : 'join'].join('|')))
}

/** The bytes the peer signs (the digest's ASCII). */
export const registrationPeerBytes = (r: Omit<ArbiterRegistration, 'sig' | 'peerSig'>): Uint8Array => new TextEncoder().encode(registrationDigest(r))

/**
 * The state a staked token is held in, as its claims key it (the key its arbiters are placed by):
 * its spend anchor, the last quorum-signed block at or before the staked block (GENESIS_ANCHOR for
 * a token at its genesis, the block before any owner-only blocks). Keyed on the staked block
 * itself, the probe would ask about a state no spend of the token ever claims.
 */
export const stakeStateOf = (s: StakedToken, anchor: string): string => tokenStateHash(s.token, anchor)

/** The transaction id a stake's probe names (no transaction has it: arbiters answer with the holder of the state, if any). */
export const stakeProbeTx = (r: Pick<ArbiterRegistration, 'did' | 'peer' | 'at'>): string => sha3Hex(new TextEncoder().encode(`rbt-stake/1|${r.did}|${r.peer}|${r.at}`))

/** Why `x` is no registration (shape only: nothing is verified here), or undefined. */
export function registrationShapeProblem (x: unknown, now: number): string | undefined {
  const r = x as Partial<ArbiterRegistration> | null
  if (r === null || typeof r !== 'object') return 'not an object'
  if (r.v !== 1) return 'unknown version'
  if (typeof r.did !== 'string' || !DID_RE.test(r.did)) return 'bad DID'
  if (typeof r.peer !== 'string' || !PEER_RE.test(r.peer)) return 'bad peer id'
  if (typeof r.at !== 'number' || !Number.isSafeInteger(r.at) || r.at <= 0) return 'bad time'
  if (r.at > now + ARBITER_CLOCK_SKEW_MS) return 'made in the future'
  if (r.leave !== undefined && r.leave !== true) return 'bad leave flag'
  if (!Array.isArray(r.stake) || r.stake.length > ARBITER_STAKE_MAX_TOKENS) return 'bad stake list'
  if (r.leave !== true && r.stake.length === 0) return 'no stake'
  const seen = new Set<string>()
  for (const s of r.stake) {
    if (typeof s?.token !== 'string' || !TOKEN_RE.test(s.token) || typeof s.block !== 'string' || !BLOCK_RE.test(s.block)) return 'bad staked token'
    if (seen.has(s.token)) return 'a token staked twice'
    seen.add(s.token)
  }
  if (typeof r.sig !== 'string' || !HEX_RE.test(r.sig) || typeof r.peerSig !== 'string' || !HEX_RE.test(r.peerSig)) return 'bad signature'
  return undefined
}

/** What a verifier found of a staked token's chain: its owner and type at its latest block (a whole RBT is worth 1). */
export interface StakeTip { owner: string, blockId: string, tokenType: number }

/** Whether a checked chain tip carries the stake: the registrant's whole RBT token at the block named (a test RBT only on a test network). */
export function stakeProblem (r: Pick<ArbiterRegistration, 'did' | 'stake'>, tips: ReadonlyMap<string, StakeTip>, o: { testNet: boolean }): string | undefined {
  let whole = 0
  for (const s of r.stake) {
    const t = tips.get(s.token)
    if (t === undefined) return `the chain of staked token ${s.token} was not shown`
    if (t.blockId !== s.block) return `staked token ${s.token} is at block ${t.blockId}, not ${s.block}`
    if (t.owner !== r.did) return `staked token ${s.token} belongs to ${t.owner}`
    if (t.tokenType !== TokenType.RBT && t.tokenType !== TokenType.TEST_RBT) return `staked token ${s.token} is no whole RBT`
    // a test RBT costs nothing to mint: it stakes only on a test network
    if (t.tokenType === TokenType.TEST_RBT && !o.testNet) return `staked token ${s.token} is a test RBT, which stakes only on a test network`
    whole++
  }
  return whole >= ARBITER_STAKE_RBT ? undefined : `${whole} RBT staked, ${ARBITER_STAKE_RBT} needed`
}

/** A registration as a node keeps it: when it first saw it, and what its checks found. */
export interface KeptRegistration {
  reg: ArbiterRegistration
  /** when this node first saw it (its clock) */
  seen: number
  /** verified: signatures and stake checked; false: refused (never counts) */
  verified: boolean
  /** its stake was found spent (a probe of its arbiters): it no longer counts */
  lapsed?: boolean
  /**
   * each staked token's spend anchor as its chain shows it (the last quorum-signed block at or
   * before the staked one), in the order of `reg.stake`; undefined: the staked block itself
   */
  anchors?: string[]
}

export interface CountRules {
  /** a registration counts this long after it was made */
  maturityMs: number
  /** and this long after this node first saw it (gossip's spread) */
  graceMs: number
  /** arbiters (peer ids) proven to have sealed twice */
  distrusted?: (peer: string) => boolean
}

export interface CommitteeMember { did: string, peer: string, at: number }

/**
 * The committee as this node counts it: per DID its latest matured registration (a leave ends the
 * seat), verified, not lapsed, its staked tokens at the latest block any registration shows of
 * them; each peer and each staked token seats one DID (the earliest). The claims count them once a
 * charter counts (below).
 */
export function countCommittee (kept: Iterable<KeptRegistration>, now: number, rules: CountRules): CommitteeMember[] {
  const all = [...kept]
  // each token's latest quorum-signed block any verified registration shows (its chain validated):
  // a stake of the token at an earlier one is a state that chain shows spent, whatever the probe
  // found and however early its registration says it was made (a former owner's prefix seats
  // nobody). Anchors, not tips: a former owner appends owner-only blocks to his old state alone
  const anchorOf = (k: KeptRegistration, i: number): number => blockNumberOf(k.anchors?.[i] ?? k.reg.stake[i]!.block)
  const newest = new Map<string, number>()
  for (const k of all) if (k.verified) k.reg.stake.forEach((s, i) => { newest.set(s.token, Math.max(newest.get(s.token) ?? -1, anchorOf(k, i))) })
  // per DID its latest matured registration: a replacement or a leave takes effect once it is as old
  // as a join must be, so nodes that saw it early and late switch together
  const latest = new Map<string, KeptRegistration>()
  for (const k of all) {
    if (!k.verified || !matured(k, now, rules)) continue
    const had = latest.get(k.reg.did)
    if (had === undefined || k.reg.at > had.reg.at || (k.reg.at === had.reg.at && k.reg.leave === true)) latest.set(k.reg.did, k)
  }
  const standing = [...latest.values()]
    .filter((k) => k.reg.leave !== true && k.lapsed !== true && rules.distrusted?.(k.reg.peer) !== true &&
      k.reg.stake.every((s, i) => anchorOf(k, i) >= (newest.get(s.token) ?? -1)))
    .sort((a, b) => a.reg.at - b.reg.at || (a.reg.did < b.reg.did ? -1 : 1))
  return oneSeatEach(standing).map((k) => ({ did: k.reg.did, peer: k.reg.peer, at: k.reg.at }))
}

/** Of registrations in order, those whose peer and staked tokens no earlier one took (each peer and token seats one DID), at most `max`. */
function oneSeatEach<K extends KeptRegistration> (ordered: readonly K[], max = Number.POSITIVE_INFINITY): K[] {
  const peers = new Set<string>()
  const tokens = new Set<string>()
  const out: K[] = []
  for (const k of ordered) {
    if (out.length >= max) break
    if (peers.has(k.reg.peer) || k.reg.stake.some((s) => tokens.has(s.token))) continue
    peers.add(k.reg.peer)
    for (const s of k.reg.stake) tokens.add(s.token)
    out.push(k)
  }
  return out
}

/** Whether a registration is old enough to count: made `maturityMs` ago and first seen here `graceMs` ago. */
export const matured = (k: KeptRegistration, now: number, rules: Pick<CountRules, 'maturityMs' | 'graceMs'>): boolean => now >= k.reg.at + rules.maturityMs && now >= k.seen + rules.graceMs

const blockNumberOf = (blockId: string): number => Number.parseInt(blockId.slice(0, blockId.indexOf('-')), 10)

/**
 * The charter: the record that a network's committee came into force, which every node can check
 * and nobody can take back (docs/protocol.md, "The arbiter committee"). It is COMMITTEE_MIN joins of
 * distinct DIDs, peers and staked tokens, each signed by its DID and its peer over a staked token
 * whose chain shows the DID's whole RBT; it counts once the youngest of them has matured, on every
 * node that holds it, and from then on the claims count the seats, however few, never peer ids
 * again. Being in force is thus a fact of data every node pulls, not of what one node happened to
 * count at some moment: a node that was idle then, or that joins years later, counts the same.
 */
export const CHARTER_SIZE = COMMITTEE_MIN

/** Why `regs` is no charter by its registrations alone (signatures and chains are the caller's), or undefined. */
export function charterProblem (regs: ReadonlyArray<Pick<ArbiterRegistration, 'did' | 'peer' | 'stake' | 'leave'>>): string | undefined {
  if (regs.length !== CHARTER_SIZE) return `a charter holds ${CHARTER_SIZE} registrations, not ${regs.length}`
  const dids = new Set<string>()
  const peers = new Set<string>()
  const tokens = new Set<string>()
  for (const r of regs) {
    if (r.leave === true) return 'a charter holds joins only'
    if (dids.has(r.did)) return `DID ${r.did} twice in the charter`
    if (peers.has(r.peer)) return `peer ${r.peer} twice in the charter`
    for (const s of r.stake) {
      if (tokens.has(s.token)) return `token ${s.token} staked twice in the charter`
      tokens.add(s.token)
    }
    dids.add(r.did)
    peers.add(r.peer)
  }
  return undefined
}

/** When a charter counts: once its youngest registration has matured. */
export const charterCountsFrom = (regs: ReadonlyArray<Pick<ArbiterRegistration, 'at'>>, maturityMs: number): number => Math.max(...regs.map((r) => r.at)) + maturityMs

/**
 * The charter a node makes of the registrations it holds verified, if they allow one: per DID its
 * newest join not lapsed, earliest first, each peer and staked token once; the first CHARTER_SIZE
 * (the charter that counts earliest). Undefined with fewer.
 */
export function charterOf<K extends KeptRegistration> (kept: Iterable<K>): K[] | undefined {
  const newest = new Map<string, K>()
  for (const k of kept) {
    if (!k.verified) continue
    const had = newest.get(k.reg.did)
    if (had === undefined || k.reg.at > had.reg.at) newest.set(k.reg.did, k)
  }
  const joins = [...newest.values()].filter((k) => k.reg.leave !== true && k.lapsed !== true)
    .sort((a, b) => a.reg.at - b.reg.at || (a.reg.did < b.reg.did ? -1 : 1))
  const out = oneSeatEach(joins, CHARTER_SIZE)
  return out.length === CHARTER_SIZE ? out : undefined
}
