import { createBlock, encodeBlockEnvelope, formatBlockId, peekBlockEnvelope, setSignature, testTokenGenesis } from '../../../src/tokenchain/block.js'
import { createRac, encodeRacEnvelope, racTokenContent, racTokenId } from '../../../src/tokenchain/rac.js'
import { RacType, TokenType } from '../../../src/tokenchain/types.js'
import { createDid, didDocumentOf } from '../../../src/wallet/create-did.js'
import { DidSigner, QuorumSigner } from '../../../src/wallet/did-crypto.js'
import type { DidDocument } from '../../../src/wallet/did-document.js'
import type { ConsensusSigner, ConsensusCollection, KeyRange, Ledger, LedgerWriter, SpentMarker, SpentMarkers, TokenState, TokenStatus, TransactionRecord } from '../../../src/consensus/ports.js'
import type { ChainBundle, ConsensusTransport } from '../../../src/consensus/messages.js'
import { buildBundle } from '../../../src/consensus/bundle.js'
import { TransferSender } from '../../../src/consensus/sender.js'
import { QuorumService } from '../../../src/consensus/quorum.js'
import { TransferReceiver } from '../../../src/consensus/receiver.js'
import { ownerSigner, quorumSigner } from '../../../src/consensus/wallet-adapters.js'
import { didSignatureVerifier } from '../../../src/tokens/verifier.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import type { OutgoingRecord } from '../../../src/consensus/records.js'
import { BoundedSet } from '../../../src/util/lru.js'
import { VERIFIED_MEMO } from '../../../src/consensus/ports.js'
import { ContractEngine } from '../../../src/contracts/sandbox.js'
import type { ScCode } from '../../../src/consensus/smart-contract.js'
import { checkAnchorPath, checkBurnProof, checkOwnedPath, contractOwnership, contractSpends, grantDigest, opensNonce, type PeerGrant, type PeerSeal } from '../../../src/consensus/claim-proofs.js'
import { MIN_QUORUM_SIGNATURES } from '../../../src/consensus/quorum-selection.js'
import { sha3Hex } from '../../../src/tokenchain/hash.js'
import { sealEvidence, type CertificateWatch, type KeptGrant, type SeenCertificate } from '../../../src/consensus/certificate-evidence.js'
import { ClaimTable, claimResult, claimThreshold, neverCertified, tallyState, type ClaimAnswer, type ClaimRecord, type ClaimStore } from '../../../src/consensus/claims.js'
import type { StateClaims } from '../../../src/consensus/ports.js'

/** An arbiter's claim table in memory (the node keeps it in its store). */
export function memoryClaimStore (): ClaimStore & { map: Map<string, ClaimRecord> } {
  const map = new Map<string, ClaimRecord>()
  return {
    map,
    getMany: async (hs) => hs.map((h) => map.get(h)),
    write: async (puts, dels) => { for (const [k, r] of puts) map.set(k, structuredClone(r)); for (const k of dels) map.delete(k) },
    entries: async function * () { yield * [...map].filter(([, r]) => r.committed !== true) }
  }
}

/** In-memory ledger with the same atomicity contract: a commit applies all its writes or none. */
export class MemoryLedger implements Ledger {
  tokens = new Map<string, TokenState>()
  blocks = new Map<string, Uint8Array[]>()
  txs = new Map<string, TransactionRecord>()
  recs = new Map<string, Map<string, unknown>>()
  failNextCommit = false

  /** Refuses (as a full disk does) each commit writing a sender's record in `state`; counts them in `.count`. */
  refuseOutgoing (state: OutgoingRecord['state'], landed = false): { count: number } {
    const seen = { count: 0 }
    this.refuseCommit = (recs) => {
      if (!recs.some((r) => r.collection === 'cs-outgoing' && (r.value as OutgoingRecord).state === state)) return false
      seen.count++
      return landed ? 'landed' : true
    }
    return seen
  }
  /**
   * refuses, as a full disk does, each commit whose records this returns true for; 'landed': the
   * commit fails and yet is applied (a failed write found in the store once it reopens)
   */
  refuseCommit?: (records: ReadonlyArray<{ collection: string, key: string, value: unknown }>) => boolean | 'landed' | 'on-reopen'
  /** the commits refused with 'on-reopen': not visible to this process; `reopen()` applies them, as a store replaying its log */
  private readonly unsettled: Array<Array<() => void>> = []
  reopen (): void { for (const ops of this.unsettled.splice(0)) for (const op of ops) op() }

  clone (): MemoryLedger {
    const c = new MemoryLedger()
    c.tokens = new Map([...this.tokens].map(([k, v]) => [k, { ...v }]))
    c.blocks = new Map([...this.blocks].map(([k, v]) => [k, [...v]]))
    c.txs = new Map(this.txs)
    c.recs = new Map([...this.recs].map(([k, v]) => [k, new Map([...v].map(([a, b]) => [a, structuredClone(b)]))]))
    return c
  }

  /** token records read through the port (tests check that choosing tokens does not read a whole wallet) */
  tokenReads = 0
  async token (id: string): Promise<TokenState | undefined> { this.tokenReads++; const t = this.tokens.get(id); return t === undefined ? undefined : { ...t } }
  async tokensOf (did: string, status?: TokenStatus): Promise<TokenState[]> {
    const out = [...this.tokens.values()].filter((t) => t.owner === did && (status === undefined || t.status === status)).map((t) => ({ ...t }))
    this.tokenReads += out.length
    return out
  }

  async holdings (did: string, status: TokenStatus): Promise<Array<{ tokenId: string, valueMilli: number }>> {
    // key order, as the owner index gives them
    return [...this.tokens.values()].filter((t) => t.owner === did && t.status === status)
      .map((t) => ({ tokenId: t.tokenId, valueMilli: t.valueMilli })).sort((x, y) => x.tokenId < y.tokenId ? -1 : x.tokenId > y.tokenId ? 1 : 0)
  }

  async freeFts (did: string, name: string, creator: string, count: number): Promise<string[]> {
    return [...this.tokens.values()].filter((t) => t.owner === did && t.status === 'Free' && t.ftName === name && t.creator === creator)
      .sort((x, y) => x.latestBlockId < y.latestBlockId ? -1 : x.latestBlockId > y.latestBlockId ? 1 : x.tokenId < y.tokenId ? -1 : 1)
      .slice(0, count).map((t) => t.tokenId)
  }

  async tokensById (ids: readonly string[], opts?: { content?: boolean }): Promise<Array<TokenState | undefined>> {
    this.tokenReads += ids.length
    return ids.map((id) => { const t = this.tokens.get(id); return t === undefined ? undefined : opts?.content === false ? { ...t, content: undefined } : { ...t } })
  }

  async chain (id: string): Promise<Uint8Array[]> { return [...(this.blocks.get(id) ?? [])] }
  async chains (ids: readonly string[]): Promise<Uint8Array[][]> { return await Promise.all(ids.map(async (id) => await this.chain(id))) }
  async tipSigners (ids: readonly string[]): Promise<Array<string[] | undefined>> {
    return ids.map((id) => { const c = this.blocks.get(id) ?? []; return c.length < 2 ? undefined : peekBlockEnvelope(c[c.length - 1]).signers })
  }
  /** records read one at a time, per collection (tests check that a transfer's tokens are read at once) */
  singleReads = new Map<string, number>()
  /** fails, as an I/O error does, each single-record read this returns true for */
  refuseRead?: (collection: string, key: string) => boolean
  async record<T> (c: ConsensusCollection, k: string): Promise<T | undefined> {
    this.singleReads.set(c, (this.singleReads.get(c) ?? 0) + 1)
    if (this.refuseRead?.(c, k) === true) throw new RbtError(ErrorCode.STORAGE_UNAVAILABLE, 'the node\'s store could not be read (injected I/O error)')
    return this.peek<T>(c, k)
  }
  async recordsByKey<T> (c: ConsensusCollection, keys: readonly string[]): Promise<Array<T | undefined>> { return keys.map((k) => this.peek<T>(c, k)) }
  private peek<T> (c: ConsensusCollection, k: string): T | undefined { const v = this.recs.get(c)?.get(k); return v === undefined ? undefined : structuredClone(v) as T }
  /** full scans per collection (records()), for tests that check what a sweep reads */
  scans = new Map<string, number>()
  async * records<T> (c: ConsensusCollection, range?: KeyRange): AsyncIterable<[string, T]> {
    if (range === undefined) this.scans.set(c, (this.scans.get(c) ?? 0) + 1)
    const rows = [...(this.recs.get(c) ?? new Map<string, unknown>())].filter(([k]) => (range?.gte === undefined || k >= range.gte) && (range?.lt === undefined || k < range.lt))
    rows.sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
    for (const [k, v] of rows) yield [k, structuredClone(v) as T]
  }
  async commit (build: (w: LedgerWriter) => void): Promise<void> {
    const ops: Array<() => void> = []
    const records: Array<{ collection: string, key: string, value: unknown }> = []
    build({
      // as the node's ledger: a token put without its content keeps the one stored (a content never changes)
      putToken: (t) => ops.push(() => this.tokens.set(t.tokenId, t.content === undefined && this.tokens.get(t.tokenId)?.content !== undefined ? { ...t, content: this.tokens.get(t.tokenId)!.content } : { ...t })),
      putBlock: (id, n, env) => ops.push(() => { const c = this.blocks.get(id) ?? []; c[n] = env; this.blocks.set(id, c) }),
      putTransaction: (t) => ops.push(() => this.txs.set(`${t.role}/${t.txid}`, t)),
      putRecord: (c, k, v) => { records.push({ collection: c, key: k, value: structuredClone(v) }); ops.push(() => { const m = this.recs.get(c) ?? new Map(); m.set(k, structuredClone(v)); this.recs.set(c, m) }) },
      delRecord: (c, k) => ops.push(() => { this.recs.get(c)?.delete(k) })
    })
    if (this.failNextCommit) { this.failNextCommit = false; throw new Error('injected commit failure') }
    const refused = this.refuseCommit?.(records) ?? false
    if (refused === 'landed') for (const op of ops) op()
    if (refused === 'on-reopen') this.unsettled.push(ops)
    if (refused !== false) throw new RbtError(ErrorCode.INSUFFICIENT_STORAGE, 'the disk holding the node\'s data is full (injected)')
    for (const op of ops) op()
  }
}

export interface SimDid { did: string, doc: DidDocument, owner: ConsensusSigner, quorum: ConsensusSigner }

export class SimNode {
  ledger = new MemoryLedger()
  dids = new Map<string, SimDid>()
  sender!: TransferSender
  quorum!: QuorumService
  receiver!: TransferReceiver
  down = false
  /** refuses SIGN requests (a quorum that voted, then failed) */
  failSign = false
  /** answers SIGN with a signature that does not verify */
  forgeSign = false
  /** envelopes any role of this node verified (shared, as on a real node) */
  verified = new BoundedSet(VERIFIED_MEMO)
  /** signatures this node's roles verified */
  verifications = 0
  fault?: (step: string) => void
  /** a new sender on the same ledger: what a restarted node's sender knows (nothing kept in memory) */
  restartSender!: () => void
  /** this node's quorum list (what its receiver vouches for) */
  quorumList: string[] = []
  /** its receiver accepts only signers of `quorumList` (trustOwnQuorumList) */
  strictReceiver = false
  /** this node as an arbiter of claims (SimNet.claims) */
  claims!: ClaimTable
  /** an arbiter that lies: grants every claim */
  liar = false
  /** an owner's node running changed code: as a sender it claims nothing and says every claim holds */
  claimsNothing = false
  /** an owner's quorum node running changed code: its quorums sign without checking any grant */
  signsAnything = false
  /** as a sender, decided on the seals of its first `sealsFirst` arbiters, the others' gathered only when asked (the node's `grow`) */
  sealsFirst?: number
  /** as a receiver, a certificate of fewer seals per state than this is short (it counts more arbiters than the sender) */
  certificateNeeds?: number
  /** told the grants this node's checks counted, and asked which arbiters it distrusts (as the node's checkGrants does) */
  certificates?: CertificateWatch
  constructor (readonly name: string, readonly net: SimNet) {}
}

/** Several simulated nodes whose transport is a direct call (a unit-test stand-in for libp2p). */
export class SimNet {
  nodes: SimNode[] = []
  docs = new Map<string, DidDocument>()
  markers = new Map<string, SpentMarker>()
  /** runs once, before the next PREPARE is delivered */
  beforePrepare: (() => Promise<void>) | undefined
  /** Every ABORT sent, in order. */
  readonly aborts: Array<{ txid: string, quorumDid: string }> = []
  /** every publish call: state hash and the quorum that published */
  published: Array<{ stateHash: string, quorum: string }> = []
  /** every network marker lookup: state hash and the node that asked */
  lookups: Array<{ stateHash: string, node: string }> = []
  quorumDids: string[] = []
  now = 1_700_000_000_000
  /** smart contracts: the engine every quorum runs them with, and the code each sender sends */
  engine = new ContractEngine()
  scCode = new Map<string, ScCode>()

  clock = { now: () => this.now }

  /**
   * Claims (docs/protocol.md, "Claims"): every node is an arbiter of every state (a network of
   * fewer than 21 nodes); off by default, so the tests written before claims keep their network
   * lookups. `cut(a, b)` says whether node a cannot reach node b (a partition).
   */
  claimsOn = false
  cut: (from: string, to: string) => boolean = () => false
  /** every transaction whose certificate a sender grew (sealsFirst) */
  grown: string[] = []
  /** the carried seals of earlier blocks that verified at a receiver's check (docs/security.md, "Carried certificates") */
  carriedSeen: PeerSeal[] = []
  /** every claim an arbiter answered: node, txid, granted */
  claimLog: Array<{ arbiter: string, txid: string, granted: boolean }> = []
  /** every burnt ancestor a checker claimed */
  burnClaims: Array<{ stateHash: string, spender: string }> = []
  /** the blocks each claim showed the arbiters to reach the contract's tip (by state), one entry per claim */
  claimPaths: Array<Readonly<Record<string, readonly Uint8Array[]>> | undefined> = []

  constructor (opts: { claims?: boolean } = {}) { this.claimsOn = opts.claims === true }

  /** What a simulated arbiter "signs" for a grant: a digest under a key of its own (a stand-in for its peer key; nobody else can make it). */
  grantSig (arbiter: string, g: Omit<PeerGrant, 'sig' | 'peer'>): string {
    return sha3Hex(new TextEncoder().encode(`${arbiter}|${this.arbiterKeys.get(arbiter) ?? ''}|${g.nonce}|${grantDigest(arbiter, g.txid, g.quorum, g.forTx, g.states)}`))
  }

  private readonly arbiterKeys = new Map<string, string>()

  /** A node's claims port: asks every node it can reach, each answering after a random short delay (so two claims interleave). */
  claimsFor (name: string): StateClaims {
    const reachable = (): SimNode[] => this.nodes.filter((n) => n.name === name || (!n.down && !this.cut(name, n.name)))
    return {
      claimFor: async (txid, claimants, hashes, burns, contract, paths) => {
        // an owner's node running changed code claims nothing and says it holds every claim
        if (this.nodes.find((n) => n.name === name)?.claimsNothing === true) {
          return { granted: true, tallies: [], grants: claimants.map((c) => ({ peer: name, sig: 'made up', txid, quorum: c.quorum, nonce: c.nonce, forTx: txid, states: [...hashes] })) }
        }
        const arbiters = this.nodes.map((n) => n.name)
        // the states, then the burnt ancestors (each spent by its burn block, claimed for this transaction)
        const items = [...hashes.map((h) => ({ h, spender: txid, via: undefined as string | undefined, proof: undefined as string[] | undefined })), ...burns.filter((b) => !hashes.includes(b.stateHash)).map((b) => ({ h: b.stateHash, spender: b.spender, via: txid, proof: b.proof }))]
        this.burnClaims.push(...burns)
        this.claimPaths.push(paths)
        // an arbiter refuses a burnt ancestor without the burn its owner signed (as the node's arbiter does)
        const proofs = didSignatureVerifier({ resolve: async (did) => this.docs.get(did) })
        const unproven = new Set((await Promise.all(items.map(async (it) => it.via !== undefined && await checkBurnProof(it.h, it.spender, it.proof, proofs) !== undefined ? it.h : undefined))).filter((h) => h !== undefined))
        // and a state the contract does not name without the owner-only blocks from it to the tip
        const tips = contractSpends(contract)
        // and, as every arbiter, a state whose block does not name the contract's sender as owner
        const owner = contractOwnership(contract)
        for (const h of hashes) {
          const why = owner.any || owner.blockless.has(h)
            ? (tips.has(h) ? undefined : checkAnchorPath(h, paths?.[h]?.map((b) => Buffer.from(b).toString('hex')), tips))
            : checkOwnedPath(h, paths?.[h], tips, owner.sender)
          if (why !== undefined) unproven.add(h)
        }
        const answers = new Map<string, Array<ClaimAnswer | undefined>>()
        const grants: PeerGrant[] = []
        await Promise.all(reachable().map(async (n) => {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 4))
          const got: Array<ClaimAnswer | undefined> = []
          for (const it of items) {
            if (unproven.has(it.h)) { got.push(undefined); continue }
            let answer: ClaimAnswer = { granted: true }
            for (const c of claimants) {
              const a: ClaimAnswer = n.liar ? { granted: true } : (await n.claims.claim(it.spender, [it.h], { peer: c.peer ?? name, quorum: c.quorum, nonce: c.nonce, sig: c.sig, ...(it.via !== undefined ? { tx: it.via } : {}) }))[0]!
              if (!a.granted) answer = a
              else {
                const g = { txid: it.spender, quorum: c.quorum, nonce: c.nonce, forTx: txid, states: [it.h] }
                grants.push({ peer: n.name, sig: this.grantSig(n.name, g), ...g })
              }
            }
            got.push(answer)
          }
          for (const g of got) if (g !== undefined) this.claimLog.push({ arbiter: n.name, txid, granted: g.granted })
          answers.set(n.name, got)
        }))
        const r = claimResult(items.map((it, i) => tallyState(it.h, arbiters, new Map([...answers].flatMap(([a, got]) => got[i] !== undefined ? [[a, got[i]]] : [])))))
        return { ...r, grants }
      },
      checkGrants: async (txid, quorum, hashes, burns, grants, nonce) => {
        if (this.nodes.find((n) => n.name === name)?.signsAnything === true) return { granted: true, tallies: [] }
        const arbiters = this.nodes.map((n) => n.name)
        const needed = [...hashes.map((h) => ({ h, holder: txid })), ...burns.map((b) => ({ h: b.stateHash, holder: b.spender }))]
        const watch = this.nodes.find((n) => n.name === name)?.certificates
        const seen: SeenCertificate[] = []
        const r = claimResult(needed.map(({ h, holder }) => {
          const counted = [...new Map(grants.filter((g) => g.quorum === quorum && (nonce === undefined || g.nonce === nonce) && g.forTx === txid && g.txid === holder && g.states.includes(h) && arbiters.includes(g.peer) &&
            watch?.distrusted(g.peer) !== true && g.sig === this.grantSig(g.peer, g)).map((g) => [g.peer, g])).values()]
          if (counted.length > 0) seen.push({ stateHash: h, txid: holder, grants: counted })
          return tallyState(h, arbiters, new Map(counted.map((g) => [g.peer, { granted: true }])))
        }))
        if (seen.length > 0) watch?.observe('quorum', seen)
        return r
      },
      release: async (txid, quorum, hashes, auth) => {
        await Promise.all(reachable().map(async (n) => { await n.claims.release(txid, hashes, quorum, auth.nonce) }))
      },
      sealFor: async (txid, items, consents, _peers) => {
        // an owner's node running changed code seals nothing and says it sealed everything
        if (this.nodes.find((n) => n.name === name)?.claimsNothing === true) {
          return { granted: true, tallies: [], seals: [...new Set(items.map((it) => it.holder))].map((holder) => ({ peer: name, sig: 'made up', holder, states: items.filter((it) => it.holder === holder).map((it) => it.stateHash) })) }
        }
        const arbiters = this.nodes.map((n) => n.name)
        const opened = new Set(consents.filter((c) => opensNonce(c.secret, c.nonce)).map((c) => c.nonce))
        const answers = new Map<string, ClaimAnswer[]>()
        const seals: PeerSeal[] = []
        await Promise.all(reachable().map(async (n) => {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 4))
          const got = n.liar
            ? items.map(() => ({ sealed: true as const }))
            : await n.claims.seal(items.map((it) => ({ ...it, forTx: txid })), opened, MIN_QUORUM_SIGNATURES)
          got.forEach((a, i) => { if (a.sealed) seals.push({ peer: n.name, holder: items[i]!.holder, states: [items[i]!.stateHash], sig: this.sealSig(n.name, items[i]!.holder, [items[i]!.stateHash]) }) })
          answers.set(n.name, got.map((a): ClaimAnswer => a.sealed ? { granted: true } : { granted: false, holder: a.holder ?? '' }))
        }))
        const r = claimResult(items.map((it, i) => tallyState(it.stateHash, arbiters, new Map([...answers].map(([a, got]) => [a, got[i]!])))))
        const first = this.nodes.find((n) => n.name === name)?.sealsFirst
        if (first !== undefined && r.granted) {
          // decided on the first arbiters' seals; the rest kept back until a receiver finds them short
          const order = (g: PeerSeal): number => arbiters.indexOf(g.peer)
          const early = seals.filter((g) => order(g) < first)
          const later = seals.filter((g) => order(g) >= first)
          return { ...r, seals: early, grow: async () => { this.grown.push(txid); return later } }
        }
        return { ...r, seals }
      },
      priorSeals: async (items, o) => {
        // as the node's check: the carried seals that verify count first (q(n) of them settle the
        // state), then each arbiter's record of each state (a liar says it sealed it to the holder)
        const n = this.nodes.length
        const arbiters = this.nodes.map((x) => x.name)
        const carried = (o?.carried ?? []).filter((g) => arbiters.includes(g.peer) && g.sig === this.sealSig(g.peer, g.holder, g.states))
        const kept: PeerSeal[] = []
        for (const it of items) {
          const shown = carried.filter((g) => g.holder === it.holder && g.states.includes(it.stateHash))
          kept.push(...shown)
          const by = new Set(shown.map((g) => g.peer))
          if (by.size >= claimThreshold(n)) continue
          let mine = by.size
          const against: string[] = []
          for (const a of reachable()) {
            if (by.has(a.name)) continue
            if (a.liar) { mine++; continue }
            const [r] = await a.claims.records([it.stateHash])
            if (r === undefined) continue
            if (r.txid === it.holder) {
              if (r.committed === true) { mine++; kept.push({ peer: a.name, holder: it.holder, states: [it.stateHash], sig: this.sealSig(a.name, it.holder, [it.stateHash]) }) }
            } else against.push(r.txid)
          }
          if (neverCertified(n, mine, against.length)) return { refused: `${against.length} of the ${n} arbiters of state ${it.stateHash} hold it for another transaction` }
        }
        this.carriedSeen.push(...carried)
        return kept.length > 0 ? { seals: kept } : {}
      },
      checkSeals: async (items, seals) => {
        const arbiters = this.nodes.map((n) => n.name)
        const watch = this.nodes.find((n) => n.name === name)?.certificates
        const valid = seals.filter((g) => arbiters.includes(g.peer) && watch?.distrusted(g.peer) !== true && g.sig === this.sealSig(g.peer, g.holder, g.states))
        const needs = this.nodes.find((n) => n.name === name)?.certificateNeeds
        const short = needs === undefined ? undefined : items.find((it) => valid.filter((g) => g.holder === it.holder && g.states.includes(it.stateHash)).length < needs)
        if (short !== undefined) return { granted: false, code: 'CLAIM_UNREACHABLE', reason: `state ${short.stateHash}: fewer than ${String(needs)} seals`, tallies: [] }
        // as the node's check: the seals of the items' states, by holder, handed to the watch
        const seen = new Map<string, SeenCertificate & { grants: KeptGrant[] }>()
        for (const g of valid) {
          for (const st of g.states) {
            if (!items.some((it) => it.stateHash === st)) continue
            const k = `${st}|${g.holder}`
            if (!seen.has(k)) seen.set(k, { stateHash: st, txid: g.holder, grants: [] })
            seen.get(k)!.grants.push(sealEvidence(g))
          }
        }
        if (seen.size > 0) watch?.observe('receiver', [...seen.values()])
        return {
          ...claimResult(items.map(({ stateHash, holder }) => {
            const ok = new Set(valid.filter((g) => g.holder === holder && g.states.includes(stateHash)).map((g) => g.peer))
            return tallyState(stateHash, arbiters, new Map([...ok].map((p) => [p, { granted: true }])))
          })),
          seals: valid.filter((g) => items.some((it) => it.holder === g.holder && g.states.includes(it.stateHash)))
        }
      }
    }
  }

  /** What a simulated arbiter "signs" for a seal (a stand-in for its peer key, as grantSig). */
  sealSig (arbiter: string, holder: string, states: readonly string[]): string {
    return sha3Hex(new TextEncoder().encode(`seal|${arbiter}|${this.arbiterKeys.get(arbiter) ?? ''}|${holder}|${[...states].sort().join(',')}`))
  }

  nodeOf (did: string): SimNode {
    const n = this.nodes.find((x) => x.dids.has(did))
    if (n === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `unknown DID ${did}`)
    if (n.down) throw new RbtError(ErrorCode.PEER_UNREACHABLE, `${n.name} is down`)
    return n
  }

  transportFor (_from: SimNode): ConsensusTransport {
    return {
      prepare: async (r) => {
        const hook = this.beforePrepare
        this.beforePrepare = undefined
        await hook?.()
        return await this.nodeOf(r.quorumDid).quorum.prepare(structuredClone(r))
      },
      sign: async (r) => {
        const n = this.nodeOf(r.quorumDid)
        if (n.failSign) throw new RbtError(ErrorCode.PEER_UNREACHABLE, `${n.name} does not answer`)
        const reply = await n.quorum.sign(r)
        // a signature of another message: well formed, but not over this block
        return n.forgeSign ? { ...reply, signature: (await n.dids.get(r.quorumDid)!.quorum.signHash('00'.repeat(32))).keySig } : reply
      },
      finalize: async (r) => { await this.nodeOf(r.quorumDid).quorum.finalize(r) },
      abort: async (r) => { this.aborts.push({ txid: r.txid, quorumDid: r.quorumDid }); await this.nodeOf(r.quorumDid).quorum.abort(r) },
      deliver: async (r) => await this.nodeOf(r.receiver).receiver.deliver(structuredClone(r)),
      probeReceiver: async (did) => await this.nodeOf(did).receiver.policy(),
      receiverHolds: async (did, states) => await this.nodeOf(did).receiver.holds(did, structuredClone(states)),
      outcome: async (peer, r) => {
        const n = this.nodes.find((x) => x.name === peer)
        if (n === undefined || n.down) throw new RbtError(ErrorCode.PEER_UNREACHABLE, `${peer} unreachable`)
        return { txid: r.txid, ...(await n.sender.outcome(r.txid)) }
      }
    }
  }

  markerStore (node?: string): SpentMarkers {
    return {
      known: async (h) => this.markers.get(h),
      knownMany: async (hs) => hs.map((h) => this.markers.get(h)),
      lookup: async (h) => { this.lookups.push({ stateHash: h, node: node ?? '' }); return this.markers.get(h) },
      publish: async (h, m) => { this.published.push({ stateHash: h, quorum: m.quorum }); this.markers.set(h, m) }
    }
  }

  addNode (name: string, ledger?: MemoryLedger): SimNode {
    const n = new SimNode(name, this)
    n.claims = new ClaimTable(memoryClaimStore(), this.clock)
    this.arbiterKeys.set(name, Math.random().toString(36).slice(2))
    if (ledger !== undefined) n.ledger = ledger
    const plain = didSignatureVerifier({ resolve: async (did) => this.docs.get(did) })
    const verifier: typeof plain = {
      ...plain,
      verify: async (...a) => { n.verifications++; return await plain.verify(...a) },
      verifyNlss: async (...a) => { n.verifications++; return await plain.verifyNlss!(...a) }
    }
    const fault = (s: string): void => { n.fault?.(s) }
    const verified = n.verified
    n.restartSender = () => { n.sender = new TransferSender({ ledger: n.ledger, transport: this.transportFor(n), verifier, verified, selfPeer: name, clock: this.clock, fault, deliverAttempts: 1, isLocalDid: async (d) => n.dids.has(d), scCode: async (id) => this.scCode.get(id)!, ...(this.claimsOn ? { claims: this.claimsFor(name) } : {}) }) }
    n.restartSender()
    n.quorum = new QuorumService({
      ledger: n.ledger, verifier, verified, signerFor: (d) => this.quorumDids.includes(d) && n.dids.has(d) ? n.dids.get(d)!.quorum : undefined,
      ownerSignerFor: (d) => n.dids.get(d)?.owner,
      markers: this.markerStore(name), ...(this.claimsOn ? { claims: this.claimsFor(name) } : {}), transport: this.transportFor(n), clock: this.clock, fault, pledgePeriodMs: 60_000, staleVoteMs: 1000, contracts: this.engine
    })
    n.receiver = new TransferReceiver({ ledger: n.ledger, verifier, verified, isLocalDid: async (d) => n.dids.has(d), ownQuorums: async () => n.quorumList, trustOwnQuorumList: () => n.strictReceiver, clock: this.clock, fault, ...(this.claimsOn ? { claims: this.claimsFor(name) } : {}) })
    this.nodes.push(n)
    return n
  }

  async addDid (node: SimNode): Promise<SimDid> {
    const created = await createDid({ type: 4, password: 'pw' })
    const doc = didDocumentOf(created)
    const local = { doc, pvtKey: created.privateFiles['pvtKey.pem'] }
    const owner = ownerSigner(new DidSigner(local, async () => ({ password: 'pw' })))
    const quorum = quorumSigner(await QuorumSigner.open(local, { privatePassword: 'pw' }))
    const d: SimDid = { did: created.did, doc, owner, quorum }
    node.dids.set(d.did, d)
    this.docs.set(d.did, doc)
    return d
  }

  /** Mints `count` whole test tokens for `did`, each with a signed RAC and a signed genesis. */
  async mint (node: SimNode, did: string, count: number): Promise<string[]> {
    const signer = node.dids.get(did)!.owner
    const ids: string[] = []
    for (let i = 0; i < count; i++) {
      const rac = createRac({ type: RacType.TEST_TOKEN, version: 1, did, tokenNumber: i, totalSupply: 1, timestamp: `${this.now}-${Math.random()}` })
      rac.signature = await signer.pvtSign(rac.hash)
      const env = encodeRacEnvelope(rac)
      const tokenId = racTokenId(env)
      let g = createBlock(testTokenGenesis({ tokenId, owner: did }))
      g = setSignature(g, did, await signer.pvtSign(g.hash))
      await node.ledger.commit((w) => {
        w.putBlock(tokenId, 0, encodeBlockEnvelope(g))
        w.putToken({ tokenId, tokenType: TokenType.TEST_RBT, valueMilli: 1000, owner: did, status: 'Free', latestBlockId: formatBlockId(0, g.hash), content: racTokenContent(env), updatedAt: this.now })
      })
      ids.push(tokenId)
    }
    return ids
  }

  /**
   * The standard network with one whole token that went from `first` (minted there) to the other
   * user and back: its chain (genesis and two transfers) in a bundle built from `first`'s ledger.
   */
  static async thereAndBack (first: 'a' | 'b'): Promise<Awaited<ReturnType<typeof SimNet.standard>> & { id: string, bundle: ChainBundle }> {
    const std = await SimNet.standard()
    const [from, to] = first === 'a' ? [std.a, std.b] : [std.b, std.a]
    const [fromDid, toDid] = first === 'a' ? [std.alice, std.bob] : [std.bob, std.alice]
    const [id] = await std.net.mint(from, fromDid.did, 1)
    await from.sender.transfer({ sender: fromDid.did, receiver: toDid.did, amountMilli: 1000, memo: '', quorums: std.net.quorumDids }, fromDid.owner)
    await to.sender.transfer({ sender: toDid.did, receiver: fromDid.did, amountMilli: 1000, memo: '', quorums: std.net.quorumDids }, toDid.owner)
    return { ...std, id, bundle: await buildBundle(from.ledger, [id]) }
  }

  /** A network of 7 quorum nodes (each one quorum DID with `stake` tokens) and two user nodes. */
  static async standard (stake = 3): Promise<{ net: SimNet, a: SimNode, b: SimNode, alice: SimDid, bob: SimDid, quorums: SimNode[] }> {
    const net = new SimNet()
    const quorums: SimNode[] = []
    for (let i = 0; i < 7; i++) {
      const q = net.addNode(`q${i}`)
      const d = await net.addDid(q)
      net.quorumDids.push(d.did)
      await net.mint(q, d.did, stake)
      quorums.push(q)
    }
    const a = net.addNode('A')
    const b = net.addNode('B')
    const alice = await net.addDid(a)
    const bob = await net.addDid(b)
    return { net, a, b, alice, bob, quorums }
  }
}

export async function balance (n: SimNode, did: string): Promise<number> {
  return (await n.ledger.tokensOf(did, 'Free')).reduce((s, t) => s + t.valueMilli, 0)
}

/** A node as a chain source (what its `sync.chain` serves): a token's stored blocks from number `from` on, in one page. */
export function chainSourceOf (n: SimNode): { chain: (tokenId: string, from: number) => AsyncIterable<Uint8Array[]> } {
  return {
    chain: async function * (tokenId: string, from: number) {
      yield (await n.ledger.chain(tokenId)).slice(from).filter((b): b is Uint8Array => b !== undefined)
    }
  }
}

/** 10 quorum nodes in two sets of 5, the wallet's node and its copy, two receivers' nodes. */
export async function twoQuorumSets (claims: boolean): Promise<{ net: SimNet, set1: string[], set2: string[], x: SimNode, y: SimNode, bobNode: SimNode, carolNode: SimNode, bob: SimDid, carol: SimDid }> {
  const net = new SimNet({ claims })
  for (let i = 0; i < 10; i++) {
    const q = net.addNode(`q${i}`)
    const d = await net.addDid(q)
    net.quorumDids.push(d.did)
    await net.mint(q, d.did, 3)
  }
  const x = net.addNode('X')
  const y = net.addNode('Y')
  const bobNode = net.addNode('B')
  const carolNode = net.addNode('C')
  const bob = await net.addDid(bobNode)
  const carol = await net.addDid(carolNode)
  return { net, set1: net.quorumDids.slice(0, 5), set2: net.quorumDids.slice(5), x, y, bobNode, carolNode, bob, carol }
}
