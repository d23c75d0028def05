import { CLAIM_ARBITERS, claimResult, claimThreshold, claimantKey, claimantTx, tallyState, type ClaimAnswer, type ClaimRecord, type ClaimResult, type ClaimTable } from '../../consensus/claims.js'
import { BlockIndex, checkAnchorPath, checkBurnProof, checkClaimProof, checkOwnedPath, committedDigest, contractOwnership, contractSpends, peerGrantBytes, releaseDigest, type ClaimantProof, type PeerGrant, type ReleaseAuth } from '../../consensus/claim-proofs.js'
import type { BurnClaim } from '../../consensus/burn-claims.js'
import type { ConsensusSigner, StateClaims } from '../../consensus/ports.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import { ErrorCode, RbtError, errorMessage, isRbtError } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { Lru } from '../../util/lru.js'
import { bytesToHex, hexToBytes } from '../../wallet/bytes.js'
import { PeerBuckets } from '../../util/peer-buckets.js'
import { verifyPeerSignature, type P2pHost } from '../../p2p/host.js'
import type { RpcClient } from '../../p2p/rpc.js'
import { closestQuery, compareDistance, kadKey, kadPeerKey, type QueryPeer } from '../../p2p/closest-query.js'
import { raceAbort } from '../../p2p/deadline.js'
import { settled } from '../../util/settled.js'
import { groupByPeer } from '../../util/group-by-peer.js'
import { closerPeerSets, spentKeyBytes, type NodeSpentMarkers } from './spent-markers.js'
import type { ArbiterView } from './arbiter-view.js'
import { type CertificateWatch, type SeenCertificate } from '../../consensus/certificate-evidence.js'
import { nodeClaimSeals } from './claim-seals.js'
import { COMMITTEE_MIN } from '../../consensus/committee.js'
import { claimRequests, PER_ITEM_MS, PROOF_UNKNOWN, type Claim, type ClaimRequestItem } from './claim-request.js'
import { CLAIM_PEER_BURST, CLAIM_PEER_RATE, RELEASE_MAX, type ClaimItem, type ClaimServer, type ClaimStatusAnswer, type StateClaimMethods, type WireProof } from './claim-rpc.js'
import { RetryQueue } from '../../util/retry-queue.js'

export { ArbiterView, ARBITER_FORGET_MS, ARBITER_VIEW_MAX } from './arbiter-view.js'
export { claimStoreOn } from './claim-store.js'
export { stateClaimRpcHandlers, CLAIM_BATCH_MAX, type StateClaimMethods } from './claim-rpc.js'

/**
 * Claims over the network (docs/protocol.md, "Claims"): a designated checker claims each state a
 * transaction spends at the state's arbiters, the k peers closest to the state's key (the peers
 * that hold its spent marker), over the rpc channel; each node is an arbiter with a durable table
 * of claims. A claim shows its proof (the sender's contract, the quorum's signed nonce), checked
 * before anything is written; only the claimant's quorum releases it, signed; an arbiter signs its
 * grants with its DID. The arbiters are counted from a durable view of the network (every peer this
 * node has been connected to), not from the live routing table only, so a side of a partition
 * still counts the arbiters it cannot reach, and refuses.
 */

/** A claim whose transaction gave no word for this long has its outcome asked (as a quorum asks a sender); then after twice as long each time. */
export const CLAIM_STALE_MS = 30_000
/** a signer's check of grants stops checking one peer's grants of one claim after this many of them failed */
const GRANT_FAILURES_PER_PEER = 2

/**
 * A release an arbiter did not take (cut off, down, timed out) is sent again by the sweeps, at most
 * this often, for RELEASE_RETRY_FOR_MS; past that, or for more than RELEASE_RETRY_MAX of them, the
 * arbiter's own question about a stale claim frees it (CLAIM_STALE_MS and more). Without it, a
 * release lost to a cut or a restart left the state claimed at that arbiter until it asked, and
 * the owner's next try was refused `STATE_CLAIMED` meanwhile.
 */
export const RELEASE_RETRY_MS = 3_000
const RELEASE_RETRY_FOR_MS = 4 * CLAIM_STALE_MS
const RELEASE_RETRY_MAX = 4096
/** Refusals of a release that may go away (a peer cut off, busy, out of disk, reopening its store after an I/O error, or not knowing the quorum's DID yet); one refused for a reason that lasts (its signature, the request) is not sent again. */
const PASSING_RELEASE_ERRORS = new Set<string>([ErrorCode.PEER_UNREACHABLE, ErrorCode.TIMEOUT, ErrorCode.NOT_RUNNING, ErrorCode.TOO_MANY_REQUESTS, ErrorCode.INTERNAL, ErrorCode.INSUFFICIENT_STORAGE, ErrorCode.STORAGE_UNAVAILABLE, ErrorCode.PROTOCOL, ErrorCode.NOT_FOUND])
const releaseMayGoThrough = (e: unknown): boolean => !isRbtError(e) || PASSING_RELEASE_ERRORS.has(e.code)
/** Claims given up by their quorum remembered at an arbiter, so a claim request arriving after its release is not granted (about 2 MB). */
const RELEASED_MEMO = 16_384
/** Requests of one claim walk in flight at once. */
const WALK_CONCURRENCY = 8
/** Proofs remembered as checked (a claim's states reach an arbiter in several requests), at most 16 MiB of their states. */
const PROOFS_MEMO = 4096

export interface NodeStateClaims extends StateClaims, ClaimServer {
  /** the arbiter's periodic duty: claims with no word for a while are settled (marker, or their claimants' signed outcome) */
  sweep: () => Promise<void>
  /** this node as a claimant: how its quorum's claim ended, `released` and `committed` signed over the claim's nonce */
  status: ClaimStatusAnswer
  table: ClaimTable
}


export function nodeStateClaims (opts: {
  host: () => P2pHost | undefined
  rpc: () => RpcClient<StateClaimMethods> | undefined
  table: ClaimTable
  view: ArbiterView
  markers: NodeSpentMarkers
  verifier: SignatureVerifier
  /** the peer of a quorum DID (a claimant the sender claims for: the arbiters ask it how its claim ended) */
  peerOf?: (did: string) => Promise<string>
  /** a quorum DID of this node, to sign the outcome of its claims */
  quorumSigner: (did: string) => ConsensusSigner | undefined
  /** how a claim of this node's quorum ended (the arbiters' status question, answered locally for this node's own claims) */
  outcome: (quorum: string, txid: string) => Promise<'pending' | 'committed' | 'released'>
  timeoutMs?: number
  /** how long a sender waits for the arbiters it asked to seal, only as many as q(n) needed, before it asks the others too (tests) */
  sealHedgeMs?: number
  log: Logger
  /**
   * conflicting certificates (certificate-evidence.ts): told the grants each certificate check
   * counted, and asked which arbiters are distrusted (their grants count nowhere: not in a check,
   * not in this node's own claims)
   */
  certificates?: CertificateWatch
  /**
   * the arbiter committee in force (docs/protocol.md, "The arbiter committee"): the peers of its
   * seated DIDs, or undefined while it is below its minimum (the peers of the view count then)
   */
  committee?: () => readonly string[] | undefined
  /** the addresses a seated arbiter registered (a claim asks the committee's arbiters directly) */
  committeeAddrs?: (peer: string) => string[]
  /**
   * This node counts only seats as arbiters (`require_committee`): while no committee is in force
   * it claims, signs and accepts nothing (docs/security.md, "Before the committee")
   */
  requireCommittee?: boolean
  /** least time between two sends of a release an arbiter did not take (default RELEASE_RETRY_MS) */
  releaseRetryMs?: number
}): NodeStateClaims {
  const { table, view, log } = opts
  const timeoutMs = opts.timeoutMs ?? 3000
  const limits = new PeerBuckets(CLAIM_PEER_RATE, CLAIM_PEER_BURST)
  // proofs checked here: the states each claim's contract spends, by claim (its later requests leave the contract out)
  const checkedProofs = new Lru<{ spends: Set<string>, owner: ReturnType<typeof contractOwnership> }>(PROOFS_MEMO, { maxBytes: 16 * 1024 * 1024, sizeOf: (v) => 192 + 64 * (v.spends.size + v.owner.blockless.size) })
  // states shown to be their claim's contract sender's (`forTx|state`: the contract fixes the sender)
  const ownedStates = new Lru<true>(4 * PROOFS_MEMO)
  const checking = new Map<string, Promise<{ spends: Set<string>, owner: ReturnType<typeof contractOwnership> }>>()
  // burnt ancestors whose burn was shown here (`state|burn`): the owner of the state signed that burn of it
  const checkedBurns = new Lru<true>(PROOFS_MEMO)
  // the sender's signature over a contract, verified once: every quorum of a transaction claims
  // with the same contract, so each arbiter would otherwise check it five times
  const senderSigs = new Lru<true>(PROOFS_MEMO)
  const proofVerifier: SignatureVerifier = {
    ...opts.verifier,
    verify: async (did, msg, sig, role) => {
      if (role !== 'owner') return await opts.verifier.verify(did, msg, sig, role)
      const k = `v|${did}|${msg}|${sig}`
      if (senderSigs.get(k) !== undefined) return true
      const ok = await opts.verifier.verify(did, msg, sig, role)
      if (ok) senderSigs.set(k, true)
      return ok
    },
    ...(opts.verifier.verifyNlss !== undefined
      ? {
          verifyNlss: async (did: string, msg: string, share: string, key: string, role?: Parameters<SignatureVerifier['verify']>[3]) => {
            const k = `n|${did}|${msg}|${share}|${key}`
            if (senderSigs.get(k) !== undefined) return true
            const ok = await opts.verifier.verifyNlss!(did, msg, share, key, role)
            if (ok) senderSigs.set(k, true)
            return ok
          }
        }
      : {})
  }
  const proofKey = (forTx: string, quorum: string, a: WireProof): string => `${forTx}|${quorum}|${a.nonce}|${a.sig}`
  // claims their quorum gave up here (its signed release, checked): a claim request of theirs that
  // arrives after the release (held up by a cut, delivered at the heal) is not granted again
  const releasedHere = new Lru<true>(RELEASED_MEMO)
  const releasedKey = (forTx: string, quorum: string, nonce: string): string => `${forTx}|${quorum}|${nonce}`
  const unreleased = (forTx: string, c: { quorum: string, nonce: string }): boolean => releasedHere.get(releasedKey(forTx, c.quorum, c.nonce)) === undefined
  const rpcNow = (): RpcClient<StateClaimMethods> => {
    const rpc = opts.rpc()
    if (rpc === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'the rpc layer is stopped')
    return rpc
  }
  type Item = ClaimRequestItem
  // the walks of one transaction's states ask the same peers: one request per peer and turn
  const claims = claimRequests({ rpc: rpcNow, timeoutMs })

  /** A state an arbiter decides on, and its claimants (one transaction's: the sender's claim for its signers). */
  type Claimed = { txid: string, stateHash: string, via?: string, claimants: ReadonlyArray<{ quorum: string, nonce: string, sig: string, peer: string }> }
  const claimantsKey = (it: Claimed): string => it.claimants.map((c) => `${c.quorum}|${c.nonce}`).join(',')
  /** The arbiter's grants for states of possibly several claims (a verified spent marker refuses), grouped by claim: one table write a group. */
  const grant = async (items: readonly Claimed[]): Promise<{ answers: ClaimAnswer[], groups: number[][] }> => {
    const out: ClaimAnswer[] = new Array(items.length)
    const groups = new Map<string, number[]>()
    items.forEach((it, i) => {
      const k = `${it.txid}|${it.via ?? ''}|${claimantsKey(it)}`
      const g = groups.get(k)
      if (g === undefined) groups.set(k, [i]); else g.push(i)
    })
    await Promise.all([...groups.values()].map(async (idx) => {
      const { txid, via, claimants } = items[idx[0]!]!
      const hashes = idx.map((i) => items[i]!.stateHash)
      // no spent marker vetoes a grant: any DID can sign one, so a stranger's marker froze an honest
      // owner's token here; the record a claim leaves (kept once its transaction committed) decides
      const answers = await table.claim(txid, hashes, claimants.map((c) => ({ peer: c.peer, quorum: c.quorum, nonce: c.nonce, sig: c.sig, ...(via !== undefined && via !== txid ? { tx: via } : {}) })))
      idx.forEach((i, j) => { out[i] = answers[j]! })
    }))
    return { answers: out, groups: [...groups.values()] }
  }

  /** This arbiter's peer-key signature over each claimant's granted states, per group (none without a host). */
  const signGroups = async (items: readonly Claimed[], answers: readonly ClaimAnswer[], groups: readonly number[][]): Promise<Array<{ idx: number[], claimant: number, sig: string }>> => {
    const h = opts.host()
    if (h === undefined) return []
    const signed = await Promise.all(groups.map(async (idx) => {
      const ok = idx.filter((i) => answers[i]!.granted)
      if (ok.length === 0) return []
      const { txid, via, claimants } = items[ok[0]!]!
      const states = ok.map((i) => items[i]!.stateHash)
      return await Promise.all(claimants.map(async (c, claimant) => {
        const sig = await h.signAsPeer(peerGrantBytes({ peer: h.peerId, txid, quorum: c.quorum, nonce: c.nonce, forTx: via ?? txid, states }))
        return { idx: ok, claimant, sig: bytesToHex(sig) }
      }))
    }))
    return signed.flat()
  }

  /** This node's own table grants `items` (claims for `forTx`) and signs each claimant's grant: the table's answers, and the grants as a signer is shown them. */
  const grantHere = async (forTx: string, items: readonly Claimed[], peer: string): Promise<{ answers: ClaimAnswer[], grants: PeerGrant[] }> => {
    // claimants whose quorum released their claim here are not granted again (as in serveClaim)
    const live = items.map((it) => ({ ...it, claimants: it.claimants.filter((c) => unreleased(forTx, c)) }))
    const keep = live.flatMap((it, i) => it.claimants.length > 0 ? [i] : [])
    const kept = keep.map((i) => live[i]!)
    const { answers, groups } = await grant(kept)
    const all: ClaimAnswer[] = items.map(() => ({ granted: false, holder: forTx }))
    answers.forEach((a, j) => { all[keep[j]!] = a })
    const grants = (await signGroups(kept, answers, groups)).map((g) => {
      const first = kept[g.idx[0]!]!
      const c = first.claimants[g.claimant]!
      return { peer, sig: g.sig, txid: first.txid, quorum: c.quorum, nonce: c.nonce, forTx, states: g.idx.map((i) => kept[i]!.stateHash) }
    })
    return { answers: all, grants }
  }

  const serveClaim = async (req: StateClaimMethods['claims.claim']['request'], asker: string): Promise<StateClaimMethods['claims.claim']['response']> => {
    // a stranger's flood is refused before any check or write (counted in states)
    if (!limits.take(asker, req.items.length)) throw new RbtError(ErrorCode.TOO_MANY_REQUESTS, `too many claims from peer ${asker}: at most ${CLAIM_PEER_RATE} states a second`)
    // each item's claimants: its quorum and proof (one), or the proofs it lists (the sender's claim)
    const claimantsOf = (it: ClaimItem): Array<{ quorum: string, p: number }> => it.ps !== undefined ? it.ps.map((p) => ({ quorum: req.proofs[p]!.quorum!, p })) : [{ quorum: it.quorum!, p: it.p! }]
    const contractOf = (p: number): Uint8Array | undefined => { const a = req.proofs[p]!; return a.contract ?? (a.cp !== undefined ? req.proofs[a.cp]?.contract : undefined) }
    // every claim's proof, before anything is written: the sender's contract, the quorum's signature
    const checks = new Map<string, { forTx: string, quorum: string, p: number, direct: Array<{ stateHash: string, path?: readonly Uint8Array[] }> }>()
    // the blocks an item shows for its state: indexes into the request's blocks, or (older senders) envelopes in hex
    const pathOf = (it: ClaimItem): readonly Uint8Array[] | undefined => it.pb !== undefined ? it.pb.map((i) => req.blocks![i]!) : it.path?.map((h) => hexToBytes(h))
    // the request's blocks decoded once, and the states each leads from indexed once
    const blockIndex = new BlockIndex()
    for (const it of req.items) {
      const forTx = it.via ?? it.txid
      for (const { quorum, p } of claimantsOf(it)) {
        const k = `${p}|${forTx}|${quorum}`
        let c = checks.get(k)
        if (c === undefined) { c = { forTx, quorum, p, direct: [] }; checks.set(k, c) }
        if (it.via === undefined) { const path = pathOf(it); c.direct.push({ stateHash: it.stateHash, ...(path !== undefined ? { path } : {}) }) }
      }
    }
    await Promise.all([...checks.values()].map(async (c) => {
      const auth = req.proofs[c.p]!
      const key = proofKey(c.forTx, c.quorum, auth)
      let checked = checkedProofs.get(key)
      if (checked === undefined) {
        const contract = contractOf(c.p)
        if (contract === undefined) throw new RbtError(ErrorCode.UNAUTHORIZED, `claim refused: ${PROOF_UNKNOWN}`, { details: { proofUnknown: true } })
        // one check of a proof at a time: the claim's other requests wait for it
        let p = checking.get(key)
        if (p === undefined) {
          p = (async () => {
            const why = await checkClaimProof(c.forTx, c.quorum, { contract, nonce: auth.nonce, sig: auth.sig }, [], proofVerifier)
            if (why !== undefined) throw new RbtError(ErrorCode.UNAUTHORIZED, `claim refused: ${why}`)
            const s = { spends: contractSpends(contract), owner: contractOwnership(contract) }
            checkedProofs.set(key, s)
            return s
          })().finally(() => { checking.delete(key) })
          checking.set(key, p)
        }
        checked = await p
      }
      // every state is shown to be the contract sender's: its block (hash-bound to the state) names
      // him as owner, and any owner-only blocks after it lead to the tip the contract spends; a
      // stranger who signs a contract of his own naming another's token holds nothing
      for (const d of c.direct) {
        const k = `${c.forTx}|${d.stateHash}`
        if (ownedStates.get(k) !== undefined) continue
        // a smart contract anyone may execute, and a token deployed by this contract (no block yet):
        // no owner to show; a state before the tip is still shown by its path
        const why = checked.owner.any || checked.owner.blockless.has(d.stateHash)
          ? (checked.spends.has(d.stateHash) ? undefined : checkAnchorPath(d.stateHash, d.path?.map(bytesToHex), checked.spends))
          : checkOwnedPath(d.stateHash, d.path, checked.spends, checked.owner.sender, blockIndex)
        if (why !== undefined) throw new RbtError(ErrorCode.UNAUTHORIZED, `claim refused: ${why}`)
        ownedStates.set(k, true)
      }
    }))
    // a burnt ancestor: the contract names no ancestor, so the burn itself is shown, signed by the
    // owner of the state it burnt (otherwise anyone could pin any state as his "ancestor")
    await Promise.all(req.items.filter((it) => it.via !== undefined).map(async (it) => {
      const key = `${it.stateHash}|${it.txid}`
      if (checkedBurns.get(key) !== undefined) return
      const why = await checkBurnProof(it.stateHash, it.txid, it.burn, opts.verifier)
      if (why !== undefined) throw new RbtError(ErrorCode.UNAUTHORIZED, `claim refused: ${why}`)
      checkedBurns.set(key, true)
    }))
    // an item whose every claimant's quorum released its claim here first (a request held up by a
    // cut) is refused alone, as held by its own transaction; the other items of the request go on
    const claimed: Claimed[] = []
    const proofOf: number[][] = []
    const live: number[] = []
    const answersOf: ClaimAnswer[] = new Array(req.items.length)
    for (const [i, it] of req.items.entries()) {
      const forTx = it.via ?? it.txid
      const cs = claimantsOf(it).filter(({ quorum, p }) => unreleased(forTx, { quorum, nonce: req.proofs[p]!.nonce }))
      if (cs.length === 0) { answersOf[i] = { granted: false, holder: forTx }; continue }
      live.push(i)
      proofOf.push(cs.map((c) => c.p))
      claimed.push({ txid: it.txid, stateHash: it.stateHash, ...(it.via !== undefined ? { via: it.via } : {}), claimants: cs.map(({ quorum, p }) => ({ quorum, nonce: req.proofs[p]!.nonce, sig: req.proofs[p]!.sig, peer: req.proofs[p]!.peer ?? asker })) })
    }
    const { answers, groups } = await grant(claimed)
    answers.forEach((a, j) => { answersOf[live[j]!] = a })
    const [closer, signed] = await Promise.all([closerPeerSets(opts.host(), req.items.map((it) => it.stateHash), asker), signGroups(claimed, answers, groups)])
    const pgrants = signed.map((g) => ({ items: g.idx.map((j) => live[j]!), p: proofOf[g.idx[0]!]![g.claimant]!, sig: g.sig }))
    return { answers: answersOf.map((a, i) => ({ ...a, closer: closer.ids[i]! })), addrs: closer.addrs, ...(pgrants.length > 0 ? { pgrants } : {}) }
  }

  const seatKeys = new Lru<Uint8Array>(4096)
  /**
   * Every seat, closest to `target` first: with a committee in force each seat is an arbiter of
   * every state. A registrant picks his seat's peer id, so seats placed by their distance to a
   * state's key would let an owner grind a handful of ids next to the state he is about to spend
   * and hold most of its arbiters with far fewer than a third of the seats.
   */
  const closestOf = (target: Uint8Array, seats: readonly string[]): string[] => {
    const keyed: Array<[string, Uint8Array]> = []
    for (const id of seats) {
      let k = seatKeys.get(id)
      if (k === undefined) { try { k = kadPeerKey(id) } catch { continue } seatKeys.set(id, k) }
      keyed.push([id, k])
    }
    return keyed.sort((a, b) => compareDistance(target, a[1], b[1])).map(([id]) => id)
  }

  /** The k arbiters of a state as this node counts them: the committee's closest seats when one is in force; else the closest of its view, the peers given, and itself. */
  const arbitersOf = (stateHash: string, also: Iterable<string>, byView = false): string[] => {
    const h = opts.host()
    if (h === undefined) return ['self']
    const target = kadKey(spentKeyBytes(stateHash))
    // a committee in force: its seats only, whoever connected or answered (peer ids cost nothing)
    const seats = byView ? undefined : opts.committee?.()
    if (seats !== undefined) return closestOf(target, seats)
    const candidates = new Map<string, Uint8Array>()
    const add = (id: string): void => { if (!candidates.has(id)) { try { candidates.set(id, kadPeerKey(id)) } catch {} } }
    add(h.peerId)
    for (const p of view.closest(target, CLAIM_ARBITERS)) add(p.peerId)
    for (const p of also) add(p)
    return [...candidates].sort((a, b) => compareDistance(target, a[1], b[1])).slice(0, CLAIM_ARBITERS).map(([id]) => id)
  }

  const claimFor = async (txid: string, claimants: ReadonlyArray<ClaimantProof>, stateHashes: readonly string[], burns: ReadonlyArray<BurnClaim>, contract: Uint8Array, paths?: Readonly<Record<string, readonly Uint8Array[]>>, only?: readonly string[]): Promise<ClaimResult & { grants: PeerGrant[] }> => {
    const h = opts.host()
    const self = h?.peerId ?? 'self'
    // the peer answering for each claimant quorum (asked by the arbiters how its claim ended)
    const withPeers = await Promise.all(claimants.map(async (c) => {
      if (c.peer !== undefined || opts.peerOf === undefined) return c
      const peer = await opts.peerOf(c.quorum).catch(() => undefined)
      return peer !== undefined ? { ...c, peer } : c
    }))
    const claim: Claim = { forTx: txid, contract, claimants: withPeers }
    // the transaction's own states, and the burnt ancestors of its parts, each spent by its burn block
    const wanted = new Map<string, Item>()
    // states that show the same block go together, so each request (64 states) carries and has the
    // arbiter decode few blocks: 1,000 FTs of ten minted groups asked in token order put all ten
    // blocks in each of sixteen requests
    const firstBlock = new Map<Uint8Array, number>()
    const blockRank = (h: string): number => {
      const b = paths?.[h]?.[0]
      if (b === undefined) return -1
      let r = firstBlock.get(b)
      if (r === undefined) { r = firstBlock.size; firstBlock.set(b, r) }
      return r
    }
    const ordered = [...stateHashes].map((h, i) => ({ h, i, r: blockRank(h) })).sort((a, b) => a.r - b.r || a.i - b.i).map((x) => x.h)
    for (const stateHash of ordered) wanted.set(stateHash, { txid, stateHash, ...(paths?.[stateHash] !== undefined ? { path: paths[stateHash] } : {}), claim })
    for (const b of burns) if (!wanted.has(b.stateHash)) wanted.set(b.stateHash, { txid: b.spender, stateHash: b.stateHash, via: txid, ...(b.proof !== undefined ? { burn: b.proof } : {}), claim })
    const items = [...wanted.values()]
    const received: PeerGrant[] = []
    // this node's own table, while the other arbiters are asked: an arbiter too when among a
    // state's k closest without a committee, or when it holds a seat; a committee in force that
    // seats other peers only would not count its grant, and its synced write held up every claim
    const committeeNow = h !== undefined && opts.rpc() !== undefined ? opts.committee?.() : undefined
    const selfItems: Claimed[] = items.map((it) => ({ txid: it.txid, stateHash: it.stateHash, ...(it.via !== undefined ? { via: it.via } : {}), claimants: withPeers.map((c) => ({ quorum: c.quorum, nonce: c.nonce, sig: c.sig, peer: c.peer ?? self })) }))
    const mine = committeeNow !== undefined && (!committeeNow.includes(self) || (only !== undefined && !only.includes(self)))
      ? undefined
      : settled((async () => {
          const own = await grantHere(txid, selfItems, self)
          received.push(...own.grants)
          return own.answers
        })())
    // the walks of a claim of many states share the arbiters' time: its deadline grows with them
    // (a 300-FT claim on a loaded machine ran past a flat 3 s at 5 of its 9 arbiters)
    const walkMs = timeoutMs + Math.min(items.length, 4096) * PER_ITEM_MS
    const tallies = await Promise.all(items.map(async (item, i) => {
      const { stateHash } = item
      const answers = new Map<string, ClaimAnswer>()
      const key = spentKeyBytes(stateHash)
      const target = kadKey(key)
      let learned: string[] = []
      const askArbiter = async (peer: QueryPeer, signal: AbortSignal): Promise<{ closer: QueryPeer[] }> => {
        if (peer.multiaddrs.length > 0) await h!.learnPeer(peer)
        const a = await raceAbort(claims.request(peer.peerId, item), signal)
        if (typeof a?.granted !== 'boolean') throw new RbtError(ErrorCode.PROTOCOL, 'malformed claim answer')
        // an arbiter proven to have granted twice: its word counts as no answer
        if (opts.certificates?.distrusted(peer.peerId) === true) return { closer: Array.isArray(a.closer) ? a.closer : [] }
        answers.set(peer.peerId, a.granted ? { granted: true } : { granted: false, holder: typeof a.holder === 'string' ? a.holder : '', ...(a.spent === true ? { spent: true as const } : {}) })
        if (a.granted) for (const g of a.grants ?? []) received.push({ peer: peer.peerId, sig: g.sig, txid: item.txid, quorum: g.quorum, nonce: g.nonce, forTx: txid, states: g.states })
        return { closer: Array.isArray(a.closer) ? a.closer : [] }
      }
      const seats = committeeNow
      if (seats !== undefined) {
        // a committee in force: its arbiters of the state are known, each asked directly
        const signal = AbortSignal.timeout(walkMs)
        await Promise.all(closestOf(target, seats).filter((p) => p !== self && (only === undefined || only.includes(p))).map(async (p) => {
          await askArbiter({ peerId: p, multiaddrs: opts.committeeAddrs?.(p) ?? [] }, signal).catch((e: unknown) => { log.debug(`claim at arbiter ${p}: ${errorMessage(e)}`) })
        }))
      } else if (h !== undefined && opts.rpc() !== undefined) {
        const start = new Map<string, QueryPeer>()
        for (const p of view.closest(target, CLAIM_ARBITERS)) start.set(p.peerId, p)
        for (const p of h.closestKnownPeers(key, CLAIM_ARBITERS)) if (!start.has(p)) start.set(p, { peerId: p, multiaddrs: [] })
        const res = await closestQuery<ClaimAnswer>({
          target,
          start: [...start.values()],
          self,
          k: CLAIM_ARBITERS,
          concurrency: WALK_CONCURRENCY,
          signal: AbortSignal.timeout(walkMs),
          ask: askArbiter
        })
        learned = res.answered
      }
      // the arbiters: the k closest of this node, its view of the network (connected peers and those
      // connected within the forget time) and the peers that answered on the way; one that does not
      // answer counts as a refusal. The routing table is asked, not counted: it keeps peers long
      // gone until it pings them out, and each would count as a refusal.
      const arbiters = h === undefined ? [self] : arbitersOf(stateHash, learned)
      if (mine !== undefined) answers.set(self, (await mine())[i]!)
      return tallyState(stateHash, arbiters, answers, txid)
    }))
    const r = claimResult(tallies)
    if (!r.granted) log.debug(`claim of ${txid.slice(0, 12)} refused: ${r.reason}`)
    // one grant per arbiter request and claimant (a request of several states is one signature)
    const unique = new Map<string, PeerGrant>()
    for (const g of received) unique.set(`${g.peer}|${g.sig}`, g)
    return { ...r, grants: [...unique.values()] }
  }

  /**
   * A seat's grant of its own quorum's claim as the quorum votes (docs/protocol.md, "Grants in the
   * votes"): with a committee in force that seats this node, its table is an arbiter of every state,
   * so the quorum's claim of the vote's states and burnt ancestors is granted here at once (the
   * quorum validated the chains itself) and the grants, signed with this node's peer key, ride the
   * vote. Nothing without a committee in force or a seat here (the sender's claim asks then).
   */
  const grantOwn = async (txid: string, claimant: ClaimantProof, stateHashes: readonly string[], burns: ReadonlyArray<Pick<BurnClaim, 'stateHash' | 'spender'>>): Promise<PeerGrant[]> => {
    const h = opts.host()
    const seats = h !== undefined ? opts.committee?.() : undefined
    if (h === undefined || seats === undefined || !seats.includes(h.peerId)) return []
    const who = [{ quorum: claimant.quorum, nonce: claimant.nonce, sig: claimant.sig, peer: h.peerId }]
    const own = [...new Set(stateHashes)]
    const items: Claimed[] = [
      ...own.map((stateHash) => ({ txid, stateHash, claimants: who })),
      ...burns.filter((b) => !own.includes(b.stateHash)).map((b) => ({ txid: b.spender, stateHash: b.stateHash, via: txid, claimants: who }))
    ]
    return (await grantHere(txid, items, h.peerId)).grants
  }

  // grants whose signature verified here, or is being verified (a signer checks those of one
  // transaction once; the sender's checks of the five votes' claims, made at once, share one check)
  const verifiedGrants = new Lru<Promise<boolean>>(PROOFS_MEMO)
  const checkGrants = async (txid: string, quorum: string, stateHashes: readonly string[], burns: ReadonlyArray<Pick<BurnClaim, 'stateHash' | 'spender'>>, grants: ReadonlyArray<PeerGrant>, nonce?: string, fellows: readonly string[] = []): Promise<ClaimResult> => {
    const h = opts.host()
    // the states this quorum holds, and the transaction each is held by (a burnt ancestor: its burn)
    const needed = [...stateHashes.map((s) => ({ stateHash: s, holder: txid })), ...burns.map((b) => ({ stateHash: b.stateHash, holder: b.spender }))]
    if (h === undefined) {
      // no network: this node's own table is the one arbiter
      const records = await table.records(needed.map((n) => n.stateHash))
      return claimResult(needed.map((n, i) => {
        const r = records[i]
        const ok = r !== undefined && r.txid === n.holder && r.claimants.some((c) => c.quorum === quorum && claimantTx(r, c) === txid && (nonce === undefined || c.nonce === nonce))
        return tallyState(n.stateHash, ['self'], new Map(ok ? [['self', { granted: true }]] : []))
      }))
    }
    // each state this check needs, with the arbiters this node counts for it (itself and the peers
    // of its view: a grant's peer this node never saw is no candidate, or an owner would need no
    // running node, only peer keys generated offline until they land closest to the state's key),
    // how many must have granted it, and which of them did, by a grant that verified
    const wanted = new Map<string, { arbiters: string[], members: Set<string>, enough: number, granted: Map<string, PeerGrant> }>()
    for (const n of needed) {
      const k = `${n.stateHash}|${n.holder}`
      if (wanted.has(k)) continue
      const arbiters = arbitersOf(n.stateHash, [])
      const members = new Set(arbiters)
      wanted.set(k, { arbiters, members, enough: claimThreshold(members.size), granted: new Map() })
    }
    // a grant of this quorum's own claim (its vote's nonce), or of a fellow signer's claim of the
    // same transaction (a seat granting its own quorum's claim as it voted: "Grants in the votes");
    // the quorum's own first
    const candidates = grants.filter((g) => {
      const mine = g.quorum === quorum && (nonce === undefined || g.nonce === nonce)
      return (mine || fellows.includes(g.quorum)) && g.forTx === txid && /^(?:[0-9a-f]{2}){1,128}$/.test(g.sig) &&
        // an arbiter proven to have granted twice counts no more
        opts.certificates?.distrusted(g.peer) !== true
    }).sort((a, b) => Number(b.quorum === quorum) - Number(a.quorum === quorum))
    // A signature is checked only when its grant can still count: it names a needed state whose
    // arbiters include its peer, that peer not yet counted there, and the state short of enough
    // (a signer is shown the grants of all five claims, the same arbiters granting each: it checks
    // about as many as it needs, not five times that). What counts is the same as checking all.
    // Grants that fail their check are forgeries (an arbiter's own grants verify): past
    // GRANT_FAILURES_PER_PEER in one peer's name for one claimant quorum, that pair's others are not
    // checked, so a request stuffed with forged grants costs a few checks per arbiter and claim, not
    // one per grant. Per claimant, not per peer: forgeries riding one signer's vote in an honest
    // arbiter's name must not keep that arbiter's real grant of another signer's claim unchecked.
    const failures = new Map<string, number>()
    const failKey = (g: PeerGrant): string => `${g.quorum}|${g.peer}`
    // the needed state `st` of `g`'s transaction where `g`'s peer is an arbiter not counted yet
    const open = (g: PeerGrant, st: string): { granted: Map<string, PeerGrant>, enough: number } | undefined => {
      const w = wanted.get(`${st}|${g.txid}`)
      return w !== undefined && w.members.has(g.peer) && !w.granted.has(g.peer) ? w : undefined
    }
    const counts = (g: PeerGrant): boolean => (failures.get(failKey(g)) ?? 0) < GRANT_FAILURES_PER_PEER && g.states.some((st) => {
      const w = open(g, st)
      return w !== undefined && w.granted.size < w.enough
    })
    for (const g of candidates) {
      if (!counts(g)) continue
      // keyed on everything the arbiter signed (a grant verified once and shown again with other states is checked again)
      const bytes = peerGrantBytes(g)
      const k = `${g.peer}|${g.sig}|${new TextDecoder().decode(bytes)}`
      let checking = verifiedGrants.get(k)
      if (checking === undefined) {
        checking = verifyPeerSignature(g.peer, bytes, hexToBytes(g.sig))
        verifiedGrants.set(k, checking)
      }
      const ok = await checking
      // only what verified is remembered (a bad signature takes no room from good ones)
      if (!ok) {
        if (verifiedGrants.get(k) === checking) verifiedGrants.delete(k)
        failures.set(failKey(g), (failures.get(failKey(g)) ?? 0) + 1)
        continue
      }
      for (const st of g.states) open(g, st)?.granted.set(g.peer, g)
    }
    const seen: SeenCertificate[] = []
    const result = claimResult(needed.map((n) => {
      const w = wanted.get(`${n.stateHash}|${n.holder}`)!
      const counted = w.arbiters.flatMap((p) => { const g = w.granted.get(p); return g !== undefined ? [g] : [] })
      if (counted.length > 0) seen.push({ stateHash: n.stateHash, txid: n.holder, grants: counted })
      return tallyState(n.stateHash, w.arbiters, new Map(counted.map((g) => [g.peer, { granted: true }])))
    }))
    // the grants counted here, compared with those seen before (a signer's check)
    if (seen.length > 0) opts.certificates?.observe('quorum', seen)
    return result
  }

  type ReleaseRequest = StateClaimMethods['claims.release']['request']
  const undelivered = new RetryQueue<{ peer: string, req: ReleaseRequest }>(
    async ({ peer, req }) => await rpcNow().call(peer, 'claims.release', req, { timeoutMs }),
    { everyMs: opts.releaseRetryMs ?? RELEASE_RETRY_MS, forMs: RELEASE_RETRY_FOR_MS, max: RELEASE_RETRY_MAX, retryable: releaseMayGoThrough })

  const release = async (txid: string, quorum: string, stateHashes: readonly string[], auth: ReleaseAuth): Promise<void> => {
    const h = opts.host()
    const self = h?.peerId ?? 'self'
    const unique = [...new Set(stateHashes)]
    releasedHere.set(releasedKey(txid, quorum, auth.nonce), true)
    await table.release(txid, unique, quorum, auth.nonce)
    if (h === undefined || opts.rpc() === undefined) return
    // every peer that may be an arbiter of one of the states: the view's and the live closest, and
    // with a committee in force the seats the claim was made at
    const seats = opts.committee?.()
    const byPeer = groupByPeer(unique.map((s) => {
      const key = spentKeyBytes(s)
      return [s, new Set([...view.closest(kadKey(key), CLAIM_ARBITERS).map((p) => p.peerId), ...h.closestKnownPeers(key, CLAIM_ARBITERS), ...(seats !== undefined ? closestOf(kadKey(key), seats) : [])])] as const
    }), self)
    let missed = 0
    await Promise.all([...byPeer].map(async ([peer, hashes]) => {
      for (let i = 0; i < hashes.length; i += RELEASE_MAX) {
        const req: ReleaseRequest = { txid, quorum, nonce: auth.nonce, sig: auth.sig, stateHashes: hashes.slice(i, i + RELEASE_MAX) }
        // a refusal for a reason that lasts is not kept to be sent again
        await rpcNow().call(peer, 'claims.release', req, { timeoutMs }).catch((e: unknown) => { if (releaseMayGoThrough(e)) { missed++; undelivered.add(`${peer}|${txid}|${quorum}|${auth.nonce}|${i}`, { peer, req }) } })
      }
    }))
    log.debug(`claims: released ${txid.slice(0, 12)} as ${quorum.slice(0, 12)} at ${byPeer.size} peer(s)${missed > 0 ? `, ${missed} request(s) not taken (sent again by the sweeps)` : ''}`)
  }

  const serveRelease = async (req: StateClaimMethods['claims.release']['request'], asker: string): Promise<{ freed: number }> => {
    if (!limits.take(asker, Math.max(1, Math.ceil(req.stateHashes.length / 16)))) throw new RbtError(ErrorCode.TOO_MANY_REQUESTS, `too many claim releases from peer ${asker}`)
    // only the claimant's quorum gives its claim up: its signature over the claim's nonce, checked
    // before any write. A check that could not be made (the quorum's DID document not found here
    // yet) is no refusal for good: the claimant sends the release again (PASSING_RELEASE_ERRORS)
    const ok = await opts.verifier.verify(req.quorum, releaseDigest(req.txid, req.quorum, req.nonce), req.sig, 'quorum').then((v) => v, (e: unknown) => e)
    if (ok !== true) {
      if (ok !== false) throw new RbtError(ErrorCode.NOT_FOUND, `claim release not checked yet: the quorum's signature could not be checked here (${errorMessage(ok)}); try again later`)
      throw new RbtError(ErrorCode.UNAUTHORIZED, 'claim release refused: the quorum\'s signature does not verify')
    }
    releasedHere.set(releasedKey(req.txid, req.quorum, req.nonce), true)
    return { freed: await table.release(req.txid, req.stateHashes, req.quorum, req.nonce) }
  }

  // the seal (docs/protocol.md, "Seals"): the sender's walk, the arbiter's side, the receiver's count
  const seals = nodeClaimSeals({ host: opts.host, rpc: rpcNow, table, limits, arbitersOf, ...(opts.certificates !== undefined ? { certificates: opts.certificates } : {}), ...(opts.committee !== undefined ? { committee: opts.committee } : {}), ...(opts.sealHedgeMs !== undefined ? { sealHedgeMs: opts.sealHedgeMs } : {}), timeoutMs, log })

  const status: ClaimStatusAnswer = async (quorum, txid, nonce, asker) => {
    // a signed answer costs a signature: one peer's questions share its claims' budget
    if (asker !== undefined && !limits.take(asker, 1)) throw new RbtError(ErrorCode.TOO_MANY_REQUESTS, `too many claim questions from peer ${asker}`)
    const outcome = await opts.outcome(quorum, txid)
    if (outcome === 'pending' || nonce === undefined) return { outcome }
    const signer = opts.quorumSigner(quorum)
    // a quorum that is not set up here cannot vouch for its outcome
    if (signer === undefined) return { outcome: 'pending' }
    return { outcome, sig: await signer.pvtSign(outcome === 'released' ? releaseDigest(txid, quorum, nonce) : committedDigest(txid, quorum, nonce)) }
  }

  /**
   * What a claimant's answer proves (only verifiable outcomes end a claim): `released` signed by its
   * quorum over the claim's nonce; `committed` of the state's own transaction shown by its verified
   * spent marker, of a burnt ancestor's claim signed by the claimant quorum. A claim written before
   * claims were signed (no nonce) ends on the answer as it did then.
   */
  const proven = async (stateHash: string, r: ClaimRecord, c: ClaimRecord['claimants'][number], a: { outcome: 'pending' | 'committed' | 'released', sig?: string }, self: boolean): Promise<'pending' | 'committed' | 'released'> => {
    if (a.outcome === 'pending') return 'pending'
    if (c.nonce === undefined) return a.outcome
    const tx = claimantTx(r, c)
    if (!self) {
      const d = a.outcome === 'released' ? releaseDigest(tx, c.quorum, c.nonce) : committedDigest(tx, c.quorum, c.nonce)
      if (typeof a.sig !== 'string' || !await opts.verifier.verify(c.quorum, d, a.sig, 'quorum').catch(() => false)) return 'pending'
    }
    if (a.outcome === 'released' || c.tx !== undefined) return a.outcome
    const marker = await opts.markers.lookup(stateHash).catch(() => undefined)
    return marker?.txid === r.txid ? 'committed' : 'pending'
  }

  const sweep = async (): Promise<void> => {
    // releases an arbiter did not take, sent again (not awaited: a peer still cut off waits its timeout)
    if (opts.rpc() !== undefined) undelivered.due()
    const stale = await table.stale(CLAIM_STALE_MS)
    if (stale.length === 0) return
    // a claim whose transaction's spent marker is here (verified) has done its work
    const markers = await opts.markers.knownMany(stale.map((s) => s.stateHash)).catch(() => [])
    const open: typeof stale = []
    for (const [i, s] of stale.entries()) {
      // a marker of the claim's own transaction signed by one of its claimant quorums (a signer of it)
      const m = markers[i]
      if (m !== undefined && m.txid === s.claim.txid && s.claim.claimants.some((c) => c.quorum === m.quorum)) await table.superseded(s.stateHash, s.claim.txid)
      else open.push(s)
    }
    // the others: their claimants are asked how the transaction they claimed for ended, once per
    // claimant and claim
    const self = opts.host()?.peerId
    const asked = new Map<string, Promise<{ outcome: 'pending' | 'committed' | 'released', sig?: string }>>()
    const ask = async (peer: string, quorum: string, tx: string, nonce: string | undefined): Promise<{ outcome: 'pending' | 'committed' | 'released', sig?: string }> => {
      try {
        if (peer === self || peer === 'self') return { outcome: await opts.outcome(quorum, tx) }
        const a = await rpcNow().call(peer, 'claims.status', { txid: tx, quorum, ...(nonce !== undefined ? { nonce } : {}) }, { timeoutMs })
        return a.outcome === 'committed' || a.outcome === 'released' ? { outcome: a.outcome, ...(typeof a.sig === 'string' ? { sig: a.sig } : {}) } : { outcome: 'pending' }
      } catch { return { outcome: 'pending' } }
    }
    for (const s of open) {
      const outcomes = new Map<string, 'pending' | 'committed' | 'released'>()
      for (const c of s.claim.claimants) {
        const key = claimantKey(s.claim, c)
        let p = asked.get(key)
        if (p === undefined) { p = ask(c.peer, c.quorum, claimantTx(s.claim, c), c.nonce); asked.set(key, p) }
        outcomes.set(key, await proven(s.stateHash, s.claim, c, await p, c.peer === self || c.peer === 'self'))
      }
      await table.settle(s.stateHash, s.claim.txid, outcomes)
    }
    if (open.length > 0) log.debug(`claims: ${open.length} stale claim(s) asked about`)
  }

  // a node that requires the committee refuses, while none is in force, whatever would count the
  // peers of its view as arbiters (peer ids cost nothing: an owner's ground ids would be all of them)
  const uncommitted = (): string | undefined => opts.requireCommittee === true && opts.host() !== undefined && opts.committee?.() === undefined
    ? `no arbiter committee is in force yet, and this node counts only arbiter seats (require_committee): transfers wait until ${COMMITTEE_MIN} seats stand together (GET /svc/v1/arbiters)`
    : undefined
  const refusal = (why: string): ClaimResult & { granted: false } => ({ granted: false, code: 'CLAIM_UNREACHABLE', reason: why, tallies: [] })
  return {
    claimFor: async (...a) => { const why = uncommitted(); return why !== undefined ? { ...refusal(why), grants: [] } : await claimFor(...a) },
    checkGrants: async (...a) => { const why = uncommitted(); return why !== undefined ? refusal(why) : await checkGrants(...a) },
    grantOwn,
    release,
    sealFor: seals.sealFor,
    sealSigned: seals.sealSigned,
    checkSeals: async (...a) => { const why = uncommitted(); return why !== undefined ? refusal(why) : await seals.checkSeals(...a) },
    // a registration's stake is still probed (no committee could form otherwise)
    priorSeals: async (items, o) => { const why = o?.stake === true || o?.byView === true ? undefined : uncommitted(); return why !== undefined ? { unanswered: why } : await seals.priorSeals(items, o) },
    serveClaim,
    serveRelease,
    serveSeal: seals.serveSeal,
    status,
    sweep,
    table
  }
}

/** Logs a failure of a best-effort claims step. */
export const claimsStepFailed = (log: Logger, what: string) => (e: unknown): void => { log.debug(`${what}: ${errorMessage(e)}`) }
