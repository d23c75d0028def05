import { claimResult, claimThreshold, neverCertified, tallyState, type ClaimAnswer, type ClaimResult, type ClaimTable } from '../../consensus/claims.js'
import { opensNonce, peerSealBytes, type PeerSeal, type SealConsent } from '../../consensus/claim-proofs.js'
import { MIN_QUORUM_SIGNATURES } from '../../consensus/quorum-selection.js'
import { sealEvidence, type CertificateWatch, type SeenCertificate } from '../../consensus/certificate-evidence.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { Lru } from '../../util/lru.js'
import type { PeerBuckets } from '../../util/peer-buckets.js'
import { bytesToHex, hexToBytes } from '../../wallet/bytes.js'
import { verifyPeerSignature, type P2pHost } from '../../p2p/host.js'
import type { RpcClient } from '../../p2p/rpc.js'
import { CLAIM_BATCH_MAX, budgetDeadline, withinBudget, type StateClaimMethods } from './claim-rpc.js'
import { groupByPeer } from '../../util/group-by-peer.js'
import { certificateCover, itemIndex, rankSeals } from '../../consensus/carried-certificates.js'
import { settled } from '../../util/settled.js'

/** How priorSeals picks the arbiters it asks. */
export interface PriorSealsOptions {
  /**
   * The peers of the view, even when a committee is in force: for a registration's stake while no
   * seat stands (with none, no arbiter could answer, and no seat would ever be taken again).
   */
  byView?: boolean
  /** seals the delivery carries for these states (the certificates the sender's node kept), counted once they verify */
  carried?: ReadonlyArray<PeerSeal>
  /** a registration's stake probed (docs/protocol.md, "The arbiter committee"): asked even by a node that requires the committee, while none is in force */
  stake?: boolean
}

/** Carried seals of one arbiter for one holder checked beyond one per batch of its states (an honest certificate has one per batch the arbiter was asked). */
const CARRIED_PER_SIGNER = 2

/**
 * How long a sender waits for the arbiters it asked to seal, only as many as q(n) needed, before it
 * asks the others too (one of them down or slow): well above a seal's round trip on a loaded LAN.
 */
const SEAL_HEDGE_MS = 300

/** Seals' signatures remembered as checked. */
const SEALS_MEMO = 4096

/**
 * The seal (docs/protocol.md, "Seals"): once a transaction's five signed, the sender has every
 * state it spends sealed at the state's arbiters with the signers' consents; an arbiter seals only
 * the claim it holds, for good, and signs the states sealed with its peer key; a receiver counts
 * the seals of each state's arbiters as its own node counts them.
 */
export function nodeClaimSeals (deps: {
  host: () => P2pHost | undefined
  /** the rpc layer (throws when stopped) */
  rpc: () => RpcClient<StateClaimMethods>
  table: ClaimTable
  /** the per-peer budget the arbiter's claims share */
  limits: PeerBuckets
  /** the k arbiters of a state as this node counts them, with extra candidates */
  /** `byView`: the peers of the view even when a committee is in force (a registration's stake while no seat stands) */
  arbitersOf: (stateHash: string, also: Iterable<string>, byView?: boolean) => string[]
  certificates?: CertificateWatch
  /** the seats of the committee in force, if one is (docs/protocol.md, "The arbiter committee") */
  committee?: () => readonly string[] | undefined
  timeoutMs: number
  /** how long a sender waits for the arbiters it asked to seal before it asks the others too (SEAL_HEDGE_MS) */
  sealHedgeMs?: number
  log: Logger
}): { sealFor: (txid: string, items: ReadonlyArray<{ stateHash: string, holder: string }>, consents: ReadonlyArray<SealConsent>, peers: readonly string[], presealed?: ReadonlyArray<PeerSeal>, before?: (others: readonly string[]) => Promise<void>) => Promise<ClaimResult & { seals: PeerSeal[], grow?: () => Promise<PeerSeal[]> }>, sealSigned: (txid: string, quorum: string, nonce: string, items: ReadonlyArray<{ stateHash: string, holder: string }>) => Promise<PeerSeal[]>, checkSeals: (items: ReadonlyArray<{ stateHash: string, holder: string }>, seals: ReadonlyArray<PeerSeal>) => Promise<ClaimResult & { seals?: PeerSeal[] }>, priorSeals: (items: ReadonlyArray<{ stateHash: string, holder: string }>, o?: PriorSealsOptions) => Promise<{ refused?: string, unanswered?: string, seals?: PeerSeal[] }>, serveSeal: (req: StateClaimMethods['claims.seal']['request'], asker: string) => Promise<StateClaimMethods['claims.seal']['response']> } {
  const { table, limits, arbitersOf, timeoutMs, log } = deps
/**
 * This arbiter's seal of some states for `forTx` (docs/protocol.md, "Seals"): the table's answers
 * and one peer-key signature per holder over the states sealed to it.
 */
const sealHere = async (forTx: string, items: ReadonlyArray<{ stateHash: string, holder: string }>, consents: ReadonlySet<string>, signer?: { quorum: string, nonce: string }): Promise<StateClaimMethods['claims.seal']['response']> => {
  const answers = await table.seal(items.map((it) => ({ ...it, forTx })), consents, MIN_QUORUM_SIGNATURES, signer)
  // one seal per holder over the states sealed to it: the asked holder's, and the other
  // transactions' a state here is sealed to (signed too: a later receiver counts a contest of an
  // earlier block only when the arbiter signed it, docs/security.md, "Carried certificates")
  const byHolder = new Map<string, number[]>()
  answers.forEach((a, i) => {
    const holder = a.sealed ? items[i]!.holder : a.committed === true && a.holder !== undefined ? a.holder : undefined
    if (holder === undefined) return
    const l = byHolder.get(holder)
    if (l === undefined) byHolder.set(holder, [i]); else l.push(i)
  })
  const h = deps.host()
  const seals = h === undefined
    ? []
    : await Promise.all([...byHolder].map(async ([holder, idx]) => ({ holder, items: idx, sig: bytesToHex(await h.signAsPeer(peerSealBytes({ peer: h.peerId, holder, states: idx.map((i) => items[i]!.stateHash) }))) })))
  return { answers: answers.map((a) => a.sealed ? { sealed: true } : { sealed: false, why: a.why, ...(a.holder !== undefined ? { holder: a.holder } : {}), ...(a.committed === true ? { committed: true } : {}) }), ...(seals.length > 0 ? { seals } : {}) }
}
/** The consents that open their nonces (a consent is the secret behind a claim's nonce). */
const openedNonces = (consents: ReadonlyArray<SealConsent>): Set<string> => new Set(consents.filter((c) => opensNonce(c.secret, c.nonce)).map((c) => c.nonce))

const serveSeal = async (req: StateClaimMethods['claims.seal']['request'], asker: string): Promise<StateClaimMethods['claims.seal']['response']> => {
  if (!limits.take(asker, req.items.length)) throw new RbtError(ErrorCode.TOO_MANY_REQUESTS, `too many seals from peer ${asker}: past this arbiter's budget of states a second`)
  return await sealHere(req.txid, req.items, openedNonces(req.consents))
}

/** A seal's signature, checked once (keyed on everything the arbiter signed). */
const verifiedSeals = new Lru<true>(SEALS_MEMO)
const sealVerifies = async (g: PeerSeal): Promise<boolean> => {
  if (!/^(?:[0-9a-f]{2}){1,128}$/.test(g.sig)) return false
  const bytes = peerSealBytes(g)
  const k = `${g.peer}|${g.sig}|${new TextDecoder().decode(bytes)}`
  if (verifiedSeals.get(k) !== undefined) return true
  const ok = await verifyPeerSignature(g.peer, bytes, hexToBytes(g.sig)).catch(() => false)
  if (ok) verifiedSeals.set(k, true)
  return ok
}

/**
 * The seals of an arbiter's answer to `claims.seal` that verify, each with the indexes (into
 * `sent`) of the items it covers: a seal counts only for the items it names with their holder.
 */
const sealsThatVerify = async (peer: string, res: StateClaimMethods['claims.seal']['response'], sent: ReadonlyArray<number>, items: ReadonlyArray<{ stateHash: string, holder: string }>): Promise<Array<{ seal: PeerSeal, idx: number[] }>> => {
  const ok = await Promise.all((Array.isArray(res.seals) ? res.seals : []).slice(0, sent.length).map(async (g) => {
    if (typeof g?.holder !== 'string' || typeof g.sig !== 'string' || !Array.isArray(g.items)) return undefined
    const idx = g.items.filter((i): i is number => Number.isInteger(i) && i >= 0 && i < sent.length && items[sent[i]!]!.holder === g.holder)
    if (idx.length === 0) return undefined
    const seal: PeerSeal = { peer, sig: g.sig, holder: g.holder, states: idx.map((i) => items[sent[i]!]!.stateHash) }
    return await sealVerifies(seal) ? { seal, idx } : undefined
  }))
  return ok.filter((g): g is { seal: PeerSeal, idx: number[] } => g !== undefined)
}

/**
 * The seals of an arbiter's answer to `claims.seal` naming another holder than the one asked for
 * (a state this arbiter sealed to another transaction) that verify, each with the indexes (into
 * `sent`) of the items it covers.
 */
const contestsThatVerify = async (peer: string, res: StateClaimMethods['claims.seal']['response'], sent: ReadonlyArray<number>, items: ReadonlyArray<{ stateHash: string, holder: string }>): Promise<Array<{ seal: PeerSeal, idx: number[] }>> => {
  const ok = await Promise.all((Array.isArray(res.seals) ? res.seals : []).slice(0, sent.length).map(async (g) => {
    if (typeof g?.holder !== 'string' || typeof g.sig !== 'string' || !Array.isArray(g.items)) return undefined
    const idx = g.items.filter((i): i is number => Number.isInteger(i) && i >= 0 && i < sent.length && items[sent[i]!]!.holder !== g.holder && res.answers[i]?.holder === g.holder)
    if (idx.length === 0) return undefined
    const seal: PeerSeal = { peer, sig: g.sig, holder: g.holder, states: idx.map((i) => items[sent[i]!]!.stateHash) }
    return await sealVerifies(seal) ? { seal, idx } : undefined
  }))
  return ok.filter((g): g is { seal: PeerSeal, idx: number[] } => g !== undefined)
}

/**
 * Seals shown for `items` rather than answered by their arbiters (a sender's presealed, a
 * delivery's carried): each counts, once its signature verifies, for the items it names with their
 * holder of which its peer is an arbiter here (`arbiters[i]`); a distrusted arbiter's counts
 * nowhere, and a seal that would count for no item is not even checked. `cap`: at most that many
 * seals of one arbiter for one holder are checked (a flood in real arbiters' names costs a few checks).
 */
const countShown = async (items: ReadonlyArray<{ stateHash: string, holder: string }>, arbiters: ReadonlyArray<ReadonlySet<string>>, shown: ReadonlyArray<PeerSeal>, cap?: (holder: string) => number): Promise<Array<{ seal: PeerSeal, idx: number[] }>> => {
  const index = itemIndex(items)
  const countsFor = (g: PeerSeal): number[] => g.states.flatMap((st) => (index.get(`${st}|${g.holder}`) ?? []).filter((i) => arbiters[i]!.has(g.peer)))
  const perSigner = new Map<string, number>()
  // best first (rankSeals): a cap spends its checks on the seals naming the items' own states
  const checked = [...new Map(rankSeals(items, shown.filter((g) => deps.certificates?.distrusted(g.peer) !== true && countsFor(g).length > 0)).map((g) => [`${g.peer}|${g.sig}`, g])).values()]
    .filter((g) => { if (cap === undefined) return true; const k = `${g.peer}|${g.holder}`; const c = perSigner.get(k) ?? 0; perSigner.set(k, c + 1); return c < cap(g.holder) })
  const ok = await Promise.all(checked.map(async (g) => await sealVerifies(g) ? { seal: g, idx: countsFor(g) } : undefined))
  return ok.filter((g): g is { seal: PeerSeal, idx: number[] } => g !== undefined)
}

/**
 * The seal of a transaction's states at their arbiters. `presealed`: seals the signers' nodes made
 * of their own tables as they signed (their SIGN answers), counted first once their signatures
 * verify; an arbiter that sealed every state it was to seal is not asked again. When those already
 * reach q(n) of every state the answer comes at once, and `grow` gathers the other arbiters' seals
 * when called (a receiver counting one seat more than this node found the certificate short);
 * otherwise as many of the other arbiters as q(n) still needs are asked and waited for, the rest
 * too when one of those fails or is slow, and `grow` gathers what was not asked or not waited for.
 */
const sealFor = async (txid: string, items: ReadonlyArray<{ stateHash: string, holder: string }>, consents: ReadonlyArray<SealConsent>, peers: readonly string[], presealed: ReadonlyArray<PeerSeal> = [], before?: (others: readonly string[]) => Promise<void>): Promise<ClaimResult & { seals: PeerSeal[], grow?: () => Promise<PeerSeal[]> }> => {
  const h = deps.host()
  const self = h?.peerId ?? 'self'
  const opened = openedNonces(consents)
  const sealsOut: PeerSeal[] = []
  // per item, each arbiter's answer (a seal is a grant of the tally; a refusal names the holder)
  const answers = items.map(() => new Map<string, ClaimAnswer>())
  const take = (peer: string, res: StateClaimMethods['claims.seal']['response'], sent: ReadonlyArray<number>): void => {
    res.answers.forEach((a, j) => {
      const i = sent[j]
      if (i === undefined || typeof a?.sealed !== 'boolean') return
      answers[i]!.set(peer, a.sealed ? { granted: true } : { granted: false, holder: typeof a.holder === 'string' ? a.holder : '' })
    })
  }
  const collect = async (peer: string, res: StateClaimMethods['claims.seal']['response'], sent: ReadonlyArray<number>): Promise<void> => {
    // an arbiter proven to have sealed twice: its word counts as no answer
    if (deps.certificates?.distrusted(peer) === true) return
    // an arbiter's seals count only as far as they verify (a receiver checks them the same way)
    const good = (await sealsThatVerify(peer, res, sent, items)).map((g) => g.seal)
    sealsOut.push(...good)
    const sealedStates = new Set(good.flatMap((g) => g.states.map((st) => `${st}|${g.holder}`)))
    // an answer `sealed` without a seal that verifies counts as silence
    take(peer, { answers: res.answers.map((a, j) => a?.sealed === true && !sealedStates.has(`${items[sent[j]!]!.stateHash}|${items[sent[j]!]!.holder}`) ? { sealed: false, holder: '' } : a) }, sent)
  }
  const all = items.map((_, i) => i)
  // every arbiter of each state as this node counts them (the peers that granted among the candidates)
  const arbiters = h === undefined ? items.map(() => [self]) : items.map((it) => arbitersOf(it.stateHash, peers))
  // the signers' own seals: each counts for the states it names with their holder of which its
  // peer is an arbiter here, once its signature verifies
  if (h !== undefined) {
    for (const { seal, idx } of await countShown(items, arbiters.map((list) => new Set(list)), presealed)) {
      sealsOut.push(seal)
      for (const i of idx) answers[i]!.set(seal.peer, { granted: true })
    }
  }
  // this node's own table, while the other arbiters are asked (an arbiter too unless a committee
  // in force seats other peers only: then its answer would not count, and its write held up the seal)
  const seats = h !== undefined ? deps.committee?.() : undefined
  const mineNeeded = (seats === undefined || seats.includes(self)) && !items.every((_, i) => answers[i]!.get(self)?.granted === true)
  // settled at once (a failure is thrown where it is awaited, never left unhandled meanwhile)
  const mine = !mineNeeded
    ? undefined
    : settled(sealHere(txid, items, opened).then(async (res) => { if (h === undefined) take(self, res, all); else await collect(self, res, all) }))
  if (h === undefined) {
    await mine?.()
    return { ...claimResult(items.map((it, i) => tallyState(it.stateHash, [self], answers[i]!))), seals: sealsOut }
  }
  // each arbiter asked for the states it has not sealed yet, those that granted the claim first (an
  // arbiter holding no record of the transaction seals nothing)
  const granters = new Set(peers)
  const byPeer = [...groupByPeer(arbiters.map((list, i) => [i, list] as const), self)]
    .map(([peer, idx]) => [peer, idx.filter((i) => answers[i]!.get(peer)?.granted !== true)] as const)
    .filter(([, idx]) => idx.length > 0)
    .sort((a, b) => Number(!granters.has(a[0])) - Number(!granters.has(b[0])))
  // the request in flight to each arbiter, or its last; each resolves true when the arbiter sealed
  // every state it was asked (false: it failed, refused one, or is distrusted here)
  const asking = new Map<string, Promise<boolean>>()
  const sealedBy = (peer: string, idx: readonly number[]): boolean => idx.every((i) => answers[i]!.get(peer)?.granted === true)
  const askPeer = async (peer: string, idx: readonly number[]): Promise<boolean> => {
    // paced to the arbiter's budget as long as its states need, not longer (see budgetDeadline)
    const until = budgetDeadline(idx.length, timeoutMs)
    for (let k = 0; k < idx.length; k += CLAIM_BATCH_MAX) {
      const sent = idx.slice(k, k + CLAIM_BATCH_MAX)
      try {
        const res = await withinBudget(async () => await deps.rpc().call(peer, 'claims.seal', { txid, items: sent.map((i) => items[i]!), consents: [...consents] }, { timeoutMs }), sent.length, until)
        if (Array.isArray(res?.answers)) await collect(peer, res, sent)
      } catch (e) { log.debug(`seal of ${txid.slice(0, 12)} at ${peer}: ${errorMessage(e)}`) }
    }
    return sealedBy(peer, idx)
  }
  // every arbiter that has not sealed all its states (once a request in flight to it ended: one
  // that failed or refused, maybe holding no record until `before` claimed there, is asked again),
  // and this node's own table; resolves once all answered
  const ask = async (): Promise<void> => {
    await Promise.all(byPeer.map(async ([peer, idx]) => {
      await asking.get(peer)
      const left = idx.filter((i) => answers[i]!.get(peer)?.granted !== true)
      if (left.length === 0) return
      const p = askPeer(peer, left)
      asking.set(peer, p)
      await p
    }))
    await mine?.()
  }
  const tally = (): ClaimResult => claimResult(items.map((it, i) => tallyState(it.stateHash, arbiters[i]!, answers[i]!)))
  /** what the certificate lacks when the seals gathered so far sufficed: the other arbiters' seals, gathered once when asked for */
  const growFrom = (counted: number): (() => Promise<PeerSeal[]>) => {
    const others = [...byPeer.map(([peer]) => peer), ...(mine !== undefined ? [self] : [])]
    let gathering: Promise<PeerSeal[]> | undefined
    return async (): Promise<PeerSeal[]> => {
      gathering ??= (before !== undefined ? before(others).catch((e: unknown) => { log.debug(`claim of ${txid.slice(0, 12)} at the other arbiters: ${errorMessage(e)}`) }) : Promise.resolve()).then(ask).then(() => {
        watchSeals('sender', items, arbiters, sealsOut)
        return sealsOut.slice(counted)
      }, (e: unknown) => { log.debug(`seal of ${txid.slice(0, 12)} at the other arbiters: ${errorMessage(e)}`); return sealsOut.slice(counted) })
      return await gathering
    }
  }
  const early = tally()
  if (early.granted && (byPeer.length > 0 || mine !== undefined)) {
    // the signers' seals suffice: the rest are gathered only if asked for (a receiver counting a
    // seat more than this node found the certificate short), once, never failing the answer
    return { ...early, seals: [...sealsOut], grow: growFrom(sealsOut.length) }
  }
  if (!early.granted) {
    // Only as many arbiters as q(n) still needs are asked (the nearest that granted, this node's
    // own table counted as coming), as the signers' own seals spare the rest: any two sets of q(n)
    // arbiters of a state share an honest one. The others are asked at once when one of those
    // fails, refuses or has not answered within SEAL_HEDGE_MS, and otherwise only when a receiver
    // counting more arbiters than this node finds the certificate short (grow).
    const need = items.map((it, i) => {
      const t = tallyState(it.stateHash, arbiters[i]!, answers[i]!)
      return t.needed - t.grants - (mine !== undefined && arbiters[i]!.includes(self) && answers[i]!.get(self)?.granted !== true ? 1 : 0)
    })
    const first = byPeer.filter(([, idx]) => {
      if (!idx.some((i) => need[i]! > 0)) return false
      for (const i of idx) need[i]!--
      return true
    })
    // the requests in flight (this node's own table's included): each wakes the wait below as it ends
    let outstanding = 0
    let failed = false
    let wake: () => void = () => {}
    const track = (p: Promise<boolean>): void => {
      outstanding++
      void p.then((ok) => { if (!ok) failed = true }, () => { failed = true }).finally(() => { outstanding--; wake() })
    }
    const start = (list: ReadonlyArray<readonly [string, readonly number[]]>): void => {
      for (const [peer, idx] of list) {
        if (asking.has(peer)) continue
        const p = askPeer(peer, idx)
        asking.set(peer, p)
        track(p)
      }
    }
    let restAsked = false
    const askRest = (): void => { if (!restAsked) { restAsked = true; start(byPeer) } }
    if (mine !== undefined) track(mine().then(() => items.every((_, i) => !arbiters[i]!.includes(self) || answers[i]!.get(self)?.granted === true)))
    start(first)
    const hedge = setTimeout(() => { askRest(); wake() }, deps.sealHedgeMs ?? SEAL_HEDGE_MS)
    try {
      // until every state has q(n) seals, or every arbiter answered without
      for (;;) {
        if (tally().granted) break
        if (failed || outstanding === 0) askRest()
        if (outstanding === 0) break
        await new Promise<void>((resolve) => { wake = resolve })
      }
    } finally { clearTimeout(hedge); wake = () => {} }
    const r = tally()
    if (r.granted && (outstanding > 0 || asking.size < byPeer.length)) {
      watchSeals('sender', items, arbiters, sealsOut)
      return { ...r, seals: [...sealsOut], grow: growFrom(sealsOut.length) }
    }
  }
  const r = early.granted ? early : tally()
  if (!r.granted) log.debug(`seal of ${txid.slice(0, 12)} refused: ${r.reason}`)
  // the seals gathered, compared with those seen before (the sender's own certificate)
  watchSeals('sender', items, arbiters, sealsOut)
  return { ...r, seals: sealsOut }
}

/**
 * A signer's own seal (docs/protocol.md, "Seals"): a quorum of this node that has just signed
 * `txid`'s block seals, in this node's table, every state held for it whose record names that
 * quorum's claim (`nonce`), and the node signs them with its peer key as any seal. Nothing held
 * here (the node is no arbiter of the state, or not asked), or held otherwise, is not sealed.
 */
const sealSigned = async (txid: string, quorum: string, nonce: string, items: ReadonlyArray<{ stateHash: string, holder: string }>): Promise<PeerSeal[]> => {
  const h = deps.host()
  if (h === undefined || items.length === 0) return []
  const res = await sealHere(txid, items, new Set(), { quorum, nonce })
  // only the seals to the states' own holders (one to another transaction is a contest's)
  return (res.seals ?? []).filter((g) => g.items.every((i) => items[i]!.holder === g.holder)).map((g) => ({ peer: h.peerId, holder: g.holder, states: g.items.map((i) => items[i]!.stateHash), sig: g.sig }))
}

const checkSeals = async (items: ReadonlyArray<{ stateHash: string, holder: string }>, seals: ReadonlyArray<PeerSeal>): Promise<ClaimResult & { seals?: PeerSeal[] }> => {
  const h = deps.host()
  if (h === undefined) {
    // no network: this node's own table is the one arbiter
    const records = await table.records(items.map((it) => it.stateHash))
    return claimResult(items.map((it, i) => {
      const r = records[i]
      const ok = r !== undefined && r.committed === true && r.txid === it.holder
      return tallyState(it.stateHash, ['self'], new Map(ok ? [['self', { granted: true }]] : []))
    }))
  }
  // the arbiters of each state as this node counts them (itself and the peers of its view); a
  // seal of any other peer is not even checked, so a flood of them costs nothing
  const arbiters = items.map((it) => arbitersOf(it.stateHash, []))
  const candidates = new Set(arbiters.flat())
  const shown = [...new Map(seals.filter((g) => candidates.has(g.peer) && deps.certificates?.distrusted(g.peer) !== true).map((g) => [`${g.peer}|${g.sig}`, g])).values()]
  const valid = (await Promise.all(shown.map(async (g) => await sealVerifies(g) ? g : undefined))).filter((g): g is PeerSeal => g !== undefined)
  const byState = new Map<string, Set<string>>()
  for (const g of valid) {
    for (const st of g.states) {
      const k = `${st}|${g.holder}`
      let peers = byState.get(k)
      if (peers === undefined) { peers = new Set(); byState.set(k, peers) }
      peers.add(g.peer)
    }
  }
  // the seals counted here, and any the delivery shows of the same states to another holder,
  // compared with those seen before (a receiver's check)
  watchSeals('receiver', items, arbiters, valid)
  // the seals counted (to the items' holders), which the receiver keeps to carry with the chain:
  // one per item and arbiter, whatever else the delivery showed
  return {
    ...claimResult(items.map((it, i) => {
      const sealed = byState.get(`${it.stateHash}|${it.holder}`) ?? new Set<string>()
      return tallyState(it.stateHash, arbiters[i]!, new Map([...sealed].map((p) => [p, { granted: true }])))
    })),
    seals: certificateCover(items, arbiters.map((list) => new Set(list)), valid)
  }
}

/**
 * A receiver's check of earlier blocks (docs/security.md, "Laundering", "Carried certificates"):
 * the seals the delivery carries for them (`o.carried`, the certificates the sender's node kept)
 * count first, once they verify; a state they leave short is asked of its arbiters, as this node
 * counts them, to seal it to its holder with no consent, which seals nothing new (only a record
 * already committed to that holder answers sealed, with its signed seal) and otherwise names the
 * transaction the arbiter holds the state for, signed when it sealed it to that one. Refused for
 * good: a state held for another transaction by 2f + 1 of its n arbiters, or sealed (signed) to
 * another by f + 1, while fewer than q(n) sealed it to its holder (never certified). Refused for
 * now (`unanswered`): a state an arbiter signed as sealed to another transaction (contested) with
 * fewer than q(n) verified seals to its holder, carried or gathered, or too few answers to tell.
 * `seals`: the verified seals to the holders, kept by the receiver for its own deliveries.
 */
const priorSeals = async (items: ReadonlyArray<{ stateHash: string, holder: string }>, o: PriorSealsOptions = {}): Promise<{ refused?: string, unanswered?: string, seals?: PeerSeal[] }> => {
  const h = deps.host()
  const self = h?.peerId ?? 'self'
  const sealed = items.map(() => new Set<string>())
  const other = items.map(() => new Map<string, { holder: string, sealed: boolean }>())
  // the arbiters whose answer about each state came back (sealed, held for another, or held by nobody)
  const answered = items.map(() => new Set<string>())
  // the verified seals to each state's holder (carried or gathered), and the contests (a seal to another)
  const kept: PeerSeal[] = []
  const contests: PeerSeal[] = []
  const take = async (peer: string, res: StateClaimMethods['claims.seal']['response'], sent: ReadonlyArray<number>): Promise<void> => {
    if (deps.certificates?.distrusted(peer) === true || !Array.isArray(res?.answers)) return
    const good = await sealsThatVerify(peer, res, sent, items)
    const verified = new Set(good.flatMap((g) => g.idx))
    kept.push(...good.map((g) => g.seal))
    const signedOther = new Map((await contestsThatVerify(peer, res, sent, items)).flatMap((g) => { contests.push(g.seal); return g.idx.map((j) => [j, g.seal.holder] as const) }))
    res.answers.forEach((a, j) => {
      const i = sent[j]
      if (i === undefined || typeof a?.sealed !== 'boolean') return
      answered[i]!.add(peer)
      if (a.sealed && (peer === self || verified.has(j))) sealed[i]!.add(peer)
      else if (!a.sealed && typeof a.holder === 'string' && a.holder !== '' && a.holder !== items[i]!.holder) {
        // sealed: the arbiter signed the state sealed (committed) to that other transaction; an
        // unsigned `committed` counts as held only (one lying seat's word cannot tip a refusal)
        other[i]!.set(peer, { holder: a.holder, sealed: signedOther.get(j) === a.holder })
      }
    })
  }
  // with no consent the request's transaction names nothing (it only picks the claimants whose
  // consents count): the states of every holder go together, one request per arbiter
  const arbiters = items.map((it) => h === undefined ? [self] : arbitersOf(it.stateHash, [], o.byView === true))
  const countedBy = arbiters.map((list) => new Set(list))
  // the carried certificates: each seal counts for the states it names with their holder, of which
  // its peer is an arbiter here, once its signature verifies (a flood of others costs nothing)
  if (h !== undefined && o.carried !== undefined && o.carried.length > 0) {
    // one seal per batch of a holder's states is what an honest certificate has, and a few more
    const statesOf = new Map<string, number>()
    for (const it of items) statesOf.set(it.holder, (statesOf.get(it.holder) ?? 0) + 1)
    for (const { seal, idx } of await countShown(items, countedBy, o.carried, (holder) => CARRIED_PER_SIGNER + Math.ceil((statesOf.get(holder) ?? 0) / CLAIM_BATCH_MAX))) {
      kept.push(seal)
      for (const i of idx) sealed[i]!.add(seal.peer)
    }
  }
  const all = items.map((_, i) => i)
  // every state sealed to its holder by q(n) of its arbiters as this node counts them: nothing a
  // later answer says can refuse it (neverCertified needs fewer, and a contest yields to a
  // certificate) and enough answered, so the arbiters are not asked, or the slowest not waited for
  const mineOf = (i: number): number => [...sealed[i]!].filter((p) => countedBy[i]!.has(p)).length
  const certified = (): boolean => items.every((_, i) => mineOf(i) >= claimThreshold(arbiters[i]!.length))
  if (!certified()) await take(self, await sealHere(items[0]?.holder ?? '', items, new Set()), all)
  if (h !== undefined && !certified()) {
    const byPeer = groupByPeer(all.map((i) => [i, arbiters[i]!] as const), self)
    let settle = (): void => {}
    const enough = new Promise<void>((resolve) => { settle = resolve })
    // batches past an arbiter's burst are paced to its budget: refused, they would count as silence
    const asked = Promise.all([...byPeer].map(async ([peer, mine]) => {
      const until = budgetDeadline(mine.length, timeoutMs)
      for (let k = 0; k < mine.length; k += CLAIM_BATCH_MAX) {
        const sent = mine.slice(k, k + CLAIM_BATCH_MAX)
        try {
          await take(peer, await withinBudget(async () => await deps.rpc().call(peer, 'claims.seal', { txid: items[sent[0]!]!.holder, items: sent.map((i) => items[i]!), consents: [] }, { timeoutMs }), sent.length, until), sent)
          if (certified()) settle()
        } catch (e) { log.debug(`earlier seals at ${peer}: ${errorMessage(e)}`) }
      }
    }))
    await Promise.race([asked, enough])
  }
  // the seals counted and the contests, compared with those seen before (an arbiter that sealed a
  // state to two transactions is proof, and its word stops counting)
  watchSeals('receiver', items, arbiters, [...kept, ...contests])
  const cover = certificateCover(items, countedBy, kept)
  const seals = cover.length > 0 ? { seals: cover } : {}
  for (const [i, it] of items.entries()) {
    const n = arbiters[i]!.length
    const counted = countedBy[i]!
    const mine = mineOf(i)
    const against = [...other[i]!].filter(([p]) => counted.has(p))
    if (neverCertified(n, mine, against.length, against.filter(([, o]) => o.sealed).length)) {
      const txs = [...new Set(against.map(([, o]) => o.holder))]
      return { refused: `${against.length} of the ${n} arbiters of state ${it.stateHash} hold it for ${txs.length === 1 ? `transaction ${txs[0]!}` : `other transactions (${txs.join(', ')})`}, and ${mine} sealed it to transaction ${it.holder}, which spent it in the chain` }
    }
  }
  for (const [i, it] of items.entries()) {
    const n = arbiters[i]!.length
    const counted = countedBy[i]!
    const mine = mineOf(i)
    // contested: an arbiter signed the state sealed to another transaction, so the block stands
    // only on a certificate of its own (f lying seats answering "nobody holds it" and one honest
    // seat out of reach would otherwise hide the seals to the other). No count of arbiters with no
    // record waives it: seats that joined since the other spend hold none, honestly. Not a verdict:
    // the rest of its certificate may come (carried, or its arbiters reached again); f liars
    // signing a made-up seal hold back a chain from before carried certificates this way
    // (liveness), never one that carries its own
    const contest = [...other[i]!].filter(([p, x]) => counted.has(p) && x.sealed)
    if (contest.length > 0 && mine < claimThreshold(n)) {
      return { ...seals, unanswered: `${contest.length} of the ${n} arbiters of state ${it.stateHash} signed it sealed to ${[...new Set(contest.map(([, x]) => x.holder))].join(', ')}, and ${mine} sealed it to transaction ${it.holder} (${claimThreshold(n)} needed for its certificate)` }
    }
  }
  // too few answers to tell: more than f arbiters silent could hide 2f + 1 holding the state for
  // another transaction. Not a verdict: the caller refuses for now and asks again later
  for (const [i, it] of items.entries()) {
    const n = arbiters[i]!.length
    const counted = countedBy[i]!
    const heard = [...answered[i]!].filter((p) => counted.has(p)).length
    const mine = mineOf(i)
    if (heard < claimThreshold(n) && mine < claimThreshold(n)) return { ...seals, unanswered: `${heard} of the ${n} arbiters of state ${it.stateHash} answered, ${claimThreshold(n)} needed to tell whether it was spent elsewhere` }
  }
  return seals
}

/**
 * Hands verified seals to the watch of conflicting certificates: per state of `items` and
 * holder, the seals of the state's arbiters (`arbiters[i]`, as this node counts them).
 */
const watchSeals = (seenBy: 'sender' | 'receiver', items: ReadonlyArray<{ stateHash: string }>, arbiters: ReadonlyArray<readonly string[]>, seals: readonly PeerSeal[]): void => {
  const watch = deps.certificates
  if (watch === undefined || seals.length === 0) return
  const of = new Map(items.map((it, i) => [it.stateHash, new Set(arbiters[i])]))
  const byKey = new Map<string, SeenCertificate & { grants: ReturnType<typeof sealEvidence>[] }>()
  for (const g of seals) {
    for (const st of g.states) {
      if (of.get(st)?.has(g.peer) !== true) continue
      const k = `${st}|${g.holder}`
      let c = byKey.get(k)
      if (c === undefined) { c = { stateHash: st, txid: g.holder, grants: [] }; byKey.set(k, c) }
      if (!c.grants.some((x) => x.peer === g.peer)) c.grants.push(sealEvidence(g))
    }
  }
  if (byKey.size > 0) watch.observe(seenBy, [...byKey.values()])
}


  return { sealFor, sealSigned, checkSeals, priorSeals, serveSeal }
}
