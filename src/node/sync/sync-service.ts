/**
 * Recovery and transaction-chain sync (docs/protocol.md, "Recovery").
 *
 * Every node serves the chains it stores (`serveChain`, `serveContents`). A fullnode also follows
 * transaction announcements and keeps, validated, the chain of every token it learns of
 * (`learn`/`archive`), issues recovery challenges and lists the tokens a DID owns once the DID has
 * signed the challenge (`issueChallenge`, `serveOwned`). A node whose data was lost rebuilds a DID's
 * wallet from a fullnode with `recover`: every chain is validated before anything is stored, and
 * everything is stored in one atomic ledger commit. `transactionChains` answers the
 * sync-transaction-chain route. The network is reached through the `SyncNetwork` interface.
 */
import { forkProof, type DoubleSpendSink } from '../../consensus/double-spends.js'
import { randomBytes } from 'node:crypto'
import { fetchAndValidate, fetchBundle, validateBundleTokens, type ChainSource, type FetchedBundle, type HeldChains } from '../../consensus/chain-sync.js'
import { pledgeIndexKeys } from '../../consensus/records.js'
import { decodeBlockEnvelope, formatBlockId, type Block } from '../../tokenchain/block.js'
import { floatToMilliExact } from '../../tokenchain/amount.js'
import { sha3Hex } from '../../tokenchain/hash.js'
import { isCidV0 } from '../../tokenchain/token-id.js'
import { isDid } from '../../tokenchain/index.js'
import { tokenKindOf, TransactionType } from '../../tokenchain/types.js'
import type { ChainTip, SignatureVerifier } from '../../tokenchain/validate.js'
import type { Collection } from '../../storage/kv-store.js'
import type { LedgerChange, StoredBlockInput, TokenLedger } from '../../storage/token-ledger.js'
import type { TokenRepositories } from '../../storage/token-repositories.js'
import { TokenStatus, type TokenKindName, type TokenRecord, type TransactionRecord } from '../../storage/token-records.js'
import { blockRecordOf, chainDumpBlock, kindName, type ChainDumpBlock } from '../../tokens/token-service.js'
import { ErrorCode, RbtError, errorMessage, isRbtError } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import type { TxChainRequest } from '../../api/server/services.js'
import { dropSpent, heldClaims, type DroppedToken, type SpentClaim } from './spent-check.js'
import { ingestedTransaction } from './ingested-transaction.js'

/** A token a fullnode reports for a DID. */
export interface OwnedToken {
  tokenId: string
  tokenType: number
  kind: TokenKindName
  status: string
  latestBlockId: string
  /** For a `Pledged` token: the transfer its owner pledged it for, and the token states that transfer created. */
  pledge?: PledgeClaim
}

/** Where a pledged token's pledge is written: the block of transaction `txid`, tip of every `backing` state. */
export interface PledgeClaim { txid: string, backing: string[] }

/** A pledge a fullnode read in an archived block (collection `fn-pledges`, key: the pledged token id). */
export interface ArchivedPledge { pledger: string, txid: string, backing: string[], epoch: number }

export const FN_PLEDGES = 'fn-pledges'

/** How the sync service reaches peers (node/sync/sync-network.ts implements it over the rpc). */
export interface SyncNetwork {
  /** The chains and contents `peer` serves. */
  source: (peer: string) => ChainSource
  challenge: (peer: string, did: string) => Promise<{ nonce: string }>
  owned: (peer: string, req: { did: string, nonce: string, signature: string }) => AsyncIterable<OwnedToken[]>
  /** Fullnodes to try, best first: configured ones, then those found on the network. */
  fullnodes: () => Promise<string[]>
  /** Resolves a configured fullnode (peer id or multiaddr) to a peer id, dialling it when needed. */
  peerOf: (fullnode: string) => Promise<string>
}

export interface SyncServiceOptions {
  ledger: TokenLedger
  repos: TokenRepositories
  verifier: SignatureVerifier
  /** Whether this node is a fullnode (follows announcements, answers recovery). */
  fullnode: boolean
  isLocalDid: (did: string) => Promise<boolean>
  network: () => SyncNetwork | undefined
  /** The fullnode's index of pledges read in archived blocks (written in the archive commit). */
  pledges: Collection<ArchivedPledge>
  /** How long a pledge holds when the tokens it backs do not move (as the quorums are configured). Default 7 days. */
  pledgePeriodMs?: number
  log: Logger
  /** Lifetime of a recovery challenge. Default 5 minutes. */
  challengeTtlMs?: number
  /** told of two spends of one state a fullnode sees (a chain forking from the one it archived) */
  doubleSpends?: DoubleSpendSink
  /** Raw block bytes per served page (base64 makes the frame about a third larger). Default 48 KiB: with the page window of 4, under 200 KiB is in flight per stream. */
  pageBytes?: number
  now?: () => number
}

export interface TypeTotal { count: number, value: number }
export interface RecoverySummary {
  did: string
  fullnode: string
  tokens: number
  /** per token kind (rbt, part, ft, nft, sc): how many tokens and their total value (RBT) */
  by_type: Record<string, TypeTotal>
  by_status: Record<string, number>
  /** blocks stored by this recovery, of owned tokens and of their ancestors */
  blocks_stored: number
  /** blocks that crossed the network */
  blocks_fetched: number
  /** owned tokens this node already held at the fullnode's tip */
  already_held: number
  token_ids: string[]
  /** tokens shown Free here that the fullnode no longer lists and whose checked chains show them spent: dropped */
  dropped_spent?: Array<{ token: string, txid: string }>
}

export interface TxChain {
  token_id: string
  token_type: number
  kind: string
  /** blocks of the chain in total (excluded ones included) */
  length: number
  blocks: ChainDumpBlock[]
}

export interface TxChainResult {
  did: string
  chains: TxChain[]
  /** blocks in this answer */
  count: number
  /** empty when this answer completes the request; otherwise send it back as `cursor` */
  next_cursor: string
}

/** Index entries for the pledges written in transfer blocks: pledged token → pledger, transaction, states it backs. */
/**
 * Tokens a ledger change brings into being: a token record at block 0 whose genesis block the
 * same change stores (a mint or a split). A later change to such a token (pledged, unpledged,
 * locked) carries no genesis block and is not a creation.
 */
export function createdTokens (change: LedgerChange): TokenRecord[] {
  const geneses = new Set((change.blocks ?? []).filter((b) => b.record.number === 0).map((b) => b.record.tokenId))
  return (change.tokens ?? []).map((t) => t.record).filter((r) => r.latestBlockNumber === 0 && geneses.has(r.tokenId))
}

function pledgesIn (envelopes: Uint8Array[]): NonNullable<LedgerChange['extra']> {
  const out = new Map<string, ArchivedPledge>()
  for (const env of envelopes) {
    const b: Block = decodeBlockEnvelope(env)
    const details = b.content.pledgeDetails
    const txid = b.content.transInfo.tid
    if (details === undefined || txid === undefined || txid === '') continue
    const backing = Object.entries(b.content.transInfo.tokens).map(([id, e]) => `${id}@${formatBlockId(e.blockNumber, b.hash)}`)
    for (const [pledger, list] of Object.entries(details)) {
      for (const t of list) out.set(t.token, { pledger, txid, backing, epoch: b.content.epoch ?? 0 })
    }
  }
  return [...out].map(([token, value]) => ({ type: 'put' as const, collection: FN_PLEDGES, key: token, value }))
}

/** Domain-separated digest a DID signs to prove ownership to a fullnode. */
export const recoveryDigest = (did: string, nonce: string): string => sha3Hex(`rbt-recover-from-fullnode:${did}:${nonce}`)

const HEX_RE = /^(?:[0-9a-f]{2})+$/i
const RECOVERABLE = new Set<string>([TokenStatus.Free, TokenStatus.Pledged])
const FT_NAME_RE = / for FT Name : (.+)$/
const rbtOf = (milli: number): number => milli / 1000
/** Failed archives of announced tokens that may wait for another try at once (the rest are given up). */
const ARCHIVE_RETRIES = 4096

export class SyncService {
  private readonly challenges = new Map<string, { did: string, expires: number }>()
  private readonly verified = new Set<string>()
  /** tokens to archive: the peer that announced each, and how many times fetching it failed */
  private readonly queue = new Map<string, { peer: string, failed: number }>()
  /** failed archives waiting for their next try (off the queue, so they hold nothing else up) */
  private readonly retries = new Set<NodeJS.Timeout>()
  private draining?: Promise<void>
  private readonly ttl: number
  private readonly pageBytes: number
  private readonly pledgePeriodMs: number
  private readonly now: () => number
  private stopped = false

  constructor (private readonly o: SyncServiceOptions) {
    this.ttl = o.challengeTtlMs ?? 5 * 60_000
    this.pageBytes = o.pageBytes ?? 48 * 1024
    this.pledgePeriodMs = o.pledgePeriodMs ?? 7 * 24 * 3600_000
    this.now = o.now ?? Date.now
  }

  get isFullnode (): boolean { return this.o.fullnode }

  stop (): void {
    this.stopped = true
    this.queue.clear()
    for (const t of this.retries) clearTimeout(t)
    this.retries.clear()
  }

  private net (): SyncNetwork {
    const n = this.o.network()
    if (n === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
    return n
  }

  private cache (): { has: (k: string) => boolean, add: (k: string) => void } {
    return { has: (k) => this.verified.has(k), add: (k) => { if (this.verified.size > 100_000) this.verified.clear(); this.verified.add(k) } }
  }

  /**
   * The whole chain of `tokenId` at `peer`, validated on its own, compared with the chain archived
   * here: a spend of the same state on both sides is flagged (double-spends.ts). Never throws.
   */
  private async compareFork (peer: string, tokenId: string): Promise<void> {
    if (this.o.doubleSpends === undefined) return
    try {
      const none: HeldChains = { chain: async () => [], content: async () => undefined }
      const whole = await fetchBundle(this.net().source(peer), none, [tokenId])
      await validateBundleTokens(whole.bundle, [tokenId], this.o.verifier, this.cache())
      const p = forkProof(tokenId, await this.held().chain(tokenId), whole.bundle.chains[tokenId] ?? [], 'sync')
      if (p !== undefined) await this.o.doubleSpends.flag(p)
    } catch (e) {
      this.o.log.debug(`fullnode: comparing the chain of ${tokenId} at ${peer}: ${errorMessage(e)}`)
    }
  }

  private held (): HeldChains {
    return {
      chain: async (id) => await this.o.repos.blocks.envelopes(await this.o.repos.blocks.chain(id)),
      content: async (id) => await this.o.repos.tokens.content(id)
    }
  }

  // ------------------------------------------------------------------ serving (every node)

  /** The stored chain of a token from block `fromNumber`, in pages of at most `pageBytes` (one block at least). */
  async * serveChain (tokenId: string, fromNumber: number): AsyncIterable<Uint8Array[]> {
    if (!isCidV0(tokenId)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed chain request: tokenId')
    if (!Number.isSafeInteger(fromNumber) || fromNumber < 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed chain request: from')
    if (await this.o.repos.blocks.latest(tokenId) === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `token ${tokenId} has no chain on this node`)
    let next = fromNumber
    let page: Uint8Array[] = []
    let size = 0
    let sent = false
    for (;;) {
      const recs = await this.o.repos.blocks.chain(tokenId, { fromNumber: next, limit: 64 })
      if (recs.length === 0) break
      const envs = await this.o.repos.blocks.envelopes(recs)
      for (const e of envs) {
        if (page.length > 0 && size + e.byteLength > this.pageBytes) { yield page; sent = true; page = []; size = 0 }
        page.push(e)
        size += e.byteLength
      }
      next = recs[recs.length - 1]!.number + 1
      if (recs.length < 64) break
    }
    if (page.length > 0 || !sent) yield page
  }

  async serveContents (tokenIds: unknown): Promise<Record<string, string>> {
    if (!Array.isArray(tokenIds) || tokenIds.length > 1000 || !tokenIds.every(isCidV0)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed contents request: tokenIds')
    const out: Record<string, string> = {}
    for (const id of tokenIds) {
      const c = await this.o.repos.tokens.content(id)
      if (c !== undefined) out[id] = c
    }
    return out
  }

  // ------------------------------------------------------------------ fullnode

  private requireFullnode (): void {
    if (!this.o.fullnode) throw new RbtError(ErrorCode.FORBIDDEN, 'this node is not a fullnode (start it with -fullnode)')
  }

  /** A single-use nonce bound to `did`. */
  issueChallenge (did: unknown): { nonce: string } {
    this.requireFullnode()
    if (!isDid(did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
    const now = this.now()
    for (const [k, v] of this.challenges) if (v.expires < now) this.challenges.delete(k)
    if (this.challenges.size > 10_000) throw new RbtError(ErrorCode.CONFLICT, 'too many recoveries in progress, try again later')
    const nonce = randomBytes(32).toString('base64')
    this.challenges.set(nonce, { did, expires: now + this.ttl })
    return { nonce }
  }

  /**
   * Verifies the DID's signature over the challenge (the nonce is spent whatever the outcome), then
   * lists the tokens whose chain ends with the DID as owner, 500 per page.
   */
  async serveOwned (req: { did?: unknown, nonce?: unknown, signature?: unknown }): Promise<AsyncIterable<OwnedToken[]>> {
    this.requireFullnode()
    const { did, nonce, signature } = req
    if (!isDid(did) || typeof nonce !== 'string' || typeof signature !== 'string' || !HEX_RE.test(signature)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed recovery request')
    const ch = this.challenges.get(nonce)
    this.challenges.delete(nonce)
    if (ch === undefined || ch.did !== did) throw new RbtError(ErrorCode.FORBIDDEN, 'unknown or used recovery challenge: ask for a new one')
    if (ch.expires < this.now()) throw new RbtError(ErrorCode.EXPIRED, 'the recovery challenge expired: ask for a new one')
    let ok = false
    try {
      ok = await this.o.verifier.verify(did, recoveryDigest(did, nonce), signature)
    } catch (e) {
      throw new RbtError(ErrorCode.VERIFICATION_FAILED, `the challenge signature of ${did} could not be checked: ${errorMessage(e)}`)
    }
    if (!ok) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `the challenge signature does not verify with the public key of ${did}`)
    const entries = (await this.o.repos.owners.list(did)).filter((e) => RECOVERABLE.has(e.status))
    const recs = await this.o.repos.tokens.getMany(entries.map((e) => e.tokenId))
    const list: OwnedToken[] = []
    for (const r of recs) {
      if (r === undefined) continue
      const pledge = await this.livePledge(r)
      list.push({ tokenId: r.tokenId, tokenType: r.tokenType, kind: r.kind, status: pledge !== undefined ? TokenStatus.Pledged : r.status, latestBlockId: r.latestBlockId, ...(pledge !== undefined ? { pledge } : {}) })
    }
    return (async function * () {
      if (list.length === 0) yield []
      for (let i = 0; i < list.length; i += 500) yield list.slice(i, i + 500)
    })()
  }

  /**
   * The pledge that holds `token` as far as this fullnode can tell: its owner pledged it in a
   * transfer whose new states are all still the tips this fullnode holds, and the pledge period has
   * not run out. (An early proof-of-work release is not announced, so it is not seen here.)
   */
  private async livePledge (token: TokenRecord): Promise<PledgeClaim | undefined> {
    const p = await this.o.pledges.get(token.tokenId)
    if (p === undefined || p.pledger !== token.owner || p.epoch * 1000 + this.pledgePeriodMs <= this.now()) return undefined
    for (const state of p.backing) {
      const at = state.indexOf('@')
      const latest = await this.o.repos.blocks.latest(state.slice(0, at))
      if (latest === undefined || latest.blockId !== state.slice(at + 1)) return undefined
    }
    return { txid: p.txid, backing: p.backing }
  }

  /**
   * A fullnode indexes the pledges of every block its ledger stores, also of transfers its own
   * wallet or quorum role committed (archive commits carry their index entries in the same batch).
   * Call after each ledger commit.
   */
  async indexPledges (change: LedgerChange): Promise<void> {
    if (!this.o.fullnode || this.stopped || (change.blocks ?? []).length === 0) return
    if ((change.extra ?? []).some((op) => op.collection === FN_PLEDGES)) return
    const ops = pledgesIn(change.blocks!.map((b) => b.envelope))
    for (const op of ops) if (op.type === 'put') await this.o.pledges.put(op.key, op.value as ArchivedPledge)
  }

  /** A fullnode heard that `peer` committed a transaction touching `tokenIds`: archive them (queued, retried). */
  learn (peer: string, tokenIds: readonly string[]): void {
    if (!this.o.fullnode || this.stopped) return
    for (const id of tokenIds) if (isCidV0(id)) this.queue.set(id, { peer, failed: 0 })
    this.kick()
  }

  private kick (): void {
    // a token queued while the last drain was ending is drained by the next
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined
      if (this.queue.size > 0 && !this.stopped) this.kick()
    })
  }

  /** Resolves once the archive queue is empty and no failed archive waits for another try. */
  async idle (): Promise<void> {
    while (this.draining !== undefined || this.retries.size > 0) {
      await (this.draining ?? new Promise((resolve) => setTimeout(resolve, 50)))
    }
  }

  /**
   * Archives the queued tokens one at a time. A token that fails is tried again later, off the
   * queue (500 ms × 2^failures, up to 6 tries; a chain that does not validate twice): waiting for
   * it in line held up every token announced after it, some 30 s per bad token, so a peer
   * announcing chains that never validate kept this fullnode from archiving anyone's.
   */
  private async drain (): Promise<void> {
    while (this.queue.size > 0 && !this.stopped) {
      const [tokenId, { peer, failed }] = this.queue.entries().next().value as [string, { peer: string, failed: number }]
      this.queue.delete(tokenId)
      try {
        const r = await this.archive(peer, [tokenId])
        if (r.stored > 0) this.o.log.debug(`fullnode: token ${tokenId} archived (${r.stored} new block(s)) from ${peer}`)
      } catch (e) {
        const tries = failed + 1
        // at most ARCHIVE_RETRIES waiting at once: a flood of announced tokens that cannot be
        // fetched is let go rather than held in timers
        if (tries >= (isRbtError(e, ErrorCode.CHAIN_INVALID) ? 2 : 6) || this.stopped || this.retries.size >= ARCHIVE_RETRIES) {
          this.o.log.warn(`fullnode: token ${tokenId} from ${peer} not archived: ${errorMessage(e)}`)
          continue
        }
        const t = setTimeout(() => {
          this.retries.delete(t)
          // announced again meanwhile: that entry is tried with its own count
          if (this.stopped || this.queue.has(tokenId)) return
          this.queue.set(tokenId, { peer, failed: tries })
          this.kick()
        }, 500 * 2 ** tries)
        t.unref()
        this.retries.add(t)
      }
    }
  }

  /**
   * Fetches the chains of `tokenIds` (with ancestors) from `peer`, validates every one, and stores
   * them all in one commit with a token record per chain (owner and state as the chain says).
   * Tokens of DIDs hosted here are left to the local wallet.
   */
  async archive (peer: string, tokenIds: readonly string[]): Promise<{ stored: number }> {
    const fetched = await fetchBundle(this.net().source(peer), this.held(), tokenIds)
    const ids = Object.keys(fetched.bundle.chains)
    let tips
    try {
      tips = await validateBundleTokens(fetched.bundle, ids, this.o.verifier, this.cache())
    } catch (e) {
      // the peer's chain does not continue the one archived here: a fork, maybe two spends of one state
      const d = e instanceof RbtError ? e.details as { tokenId?: string, blockNumber?: number, check?: string } | undefined : undefined
      if (d?.check === 'previous-block' && d.tokenId !== undefined && d.blockNumber === fetched.held[d.tokenId]) await this.compareFork(peer, d.tokenId)
      throw e
    }
    const records: Array<{ tokenId: string, status: string }> = []
    for (const id of ids) {
      const existing = await this.o.repos.tokens.get(id)
      if (existing !== undefined && await this.o.isLocalDid(existing.owner)) continue
      const tip = tips.get(id)!
      records.push({ tokenId: id, status: tip.burnt ? TokenStatus.Burnt : TokenStatus.Free })
    }
    const change = await this.buildChange(fetched, tips, records, 'archive')
    if (change.tokens!.length === 0 && change.blocks!.length === 0) return { stored: 0 }
    change.extra = pledgesIn(change.blocks!.map((b) => b.envelope))
    await this.o.ledger.commit(change)
    return { stored: change.blocks!.length }
  }

  // ------------------------------------------------------------------ recovery (the node that lost its data)

  /**
   * Rebuilds the wallet of `did` from a fullnode: challenge, signature (through `sign`, bound to the
   * two-step flow by the caller), list of owned tokens, chains fetched and validated, then one
   * commit. A token is taken only when its validated chain ends with `did` as owner.
   */
  async recover (did: string, sign: (digestHex: string) => Promise<string>, fullnode?: string): Promise<RecoverySummary> {
    if (!isDid(did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
    const net = this.net()
    const candidates = fullnode !== undefined && fullnode !== '' ? [await net.peerOf(fullnode)] : await net.fullnodes()
    if (candidates.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, 'no fullnode found: add one to the config (rbtnode.fullnodes) or connect to a network that has one')
    let peer = ''
    let nonce = ''
    const failures: string[] = []
    for (const c of candidates) {
      try {
        nonce = (await net.challenge(c, did)).nonce
        peer = c
        break
      } catch (e) {
        failures.push(`${c}: ${errorMessage(e)}`)
      }
    }
    if (peer === '') throw new RbtError(ErrorCode.PEER_UNREACHABLE, `no fullnode answered: ${failures.join('; ')}`)
    this.o.log.info(`sync of ${did}: fullnode ${peer} issued a challenge`)
    const signature = await sign(recoveryDigest(did, nonce))
    const owned: OwnedToken[] = []
    for await (const page of net.owned(peer, { did, nonce, signature })) {
      if (!Array.isArray(page)) throw new RbtError(ErrorCode.PROTOCOL, `fullnode ${peer} sent a malformed page`)
      for (const t of page) {
        if (t === null || typeof t !== 'object' || !isCidV0(t.tokenId) || typeof t.status !== 'string') throw new RbtError(ErrorCode.PROTOCOL, `fullnode ${peer} sent a malformed token entry`)
        if (RECOVERABLE.has(t.status)) owned.push(t)
      }
    }
    const ids = [...new Set(owned.map((t) => t.tokenId))]
    // the chains of the tokens that pledged ones back are fetched and validated too: they prove the pledge
    const backing = [...new Set(owned.flatMap((t) => t.status === TokenStatus.Pledged ? (t.pledge?.backing ?? []).map((b) => b.slice(0, b.indexOf('@'))) : []))].filter((id) => isCidV0(id) && !ids.includes(id))
    this.o.log.info(`sync of ${did}: fullnode ${peer} lists ${ids.length} token(s); fetching their chains`)
    // fetched and validated in batches, each validated while the next is fetched
    const { fetched, tips } = await fetchAndValidate(net.source(peer), this.held(), [...ids, ...backing], this.o.verifier, this.cache())
    this.o.log.debug(`sync of ${did}: ${fetched.fetchedBlocks} block(s) fetched, chains valid`)
    const listed = new Map(owned.map((t) => [t.tokenId, t]))
    const records: Array<{ tokenId: string, status: string, txId?: string }> = []
    const pledges = new Map<string, { txid: string, quorumDid: string, tokens: string[], newBlockIds: string[], releaseAt: number }>()
    let alreadyHeld = 0
    // A fullnode's listing may trail the chains it serves (a payment it archived after listing):
    // a listed token whose validated chain names another owner or a burn is not taken, and is
    // treated as unlisted (dropped below if this node still shows it Free).
    const moved = ids.filter((id) => { const tip = tips.get(id)!; return tip.owner !== did || tip.burnt })
    for (const id of moved) {
      const tip = tips.get(id)!
      this.o.log.info(`sync of ${did}: fullnode ${peer} listed token ${id}, but its chain ends with ${tip.burnt ? 'a burn' : `owner ${tip.owner}`}: not taken`)
      listed.delete(id)
    }
    const taken = ids.filter((id) => listed.has(id))
    for (const id of taken) {
      const tip = tips.get(id)!
      const entry = listed.get(id)!
      let status = entry.status
      let txId: string | undefined
      if (status === TokenStatus.Pledged) {
        const proof = this.checkPledge(fetched, tips, did, id, entry.pledge, peer)
        const p = pledges.get(proof.txid) ?? { txid: proof.txid, quorumDid: did, tokens: [], newBlockIds: proof.backing, releaseAt: proof.epoch * 1000 + this.pledgePeriodMs }
        p.tokens.push(id)
        pledges.set(proof.txid, p)
        txId = proof.txid
        if (p.releaseAt <= this.now()) status = TokenStatus.Free
      }
      const existing = await this.o.repos.tokens.get(id)
      if (existing !== undefined && existing.latestBlockId === tip.blockId && existing.owner === did && existing.status === status) { alreadyHeld++; continue }
      records.push({ tokenId: id, status, ...(txId !== undefined && status === TokenStatus.Pledged ? { txId } : {}) })
    }
    const change = await this.buildChange(fetched, tips, records, `recover:${did}:${nonce}`, new Set(taken), new Set(moved))
    // the pledge comes back with its release rules: the quorum role frees it when a backed token moves on or the period ends
    change.extra = [...pledges.values()].filter((p) => p.releaseAt > this.now() && records.some((r) => r.txId === p.txid))
      .flatMap((p) => [
        { type: 'put' as const, collection: 'cs-pledges', key: `${p.quorumDid}/${p.txid}`, value: p as unknown },
        ...pledgeIndexKeys(p).map((k) => ({ type: 'put' as const, collection: 'cs-pledge-index', key: k, value: `${p.quorumDid}/${p.txid}` as unknown }))
      ])
    await this.o.ledger.commit(change)
    // what this node shows as Free for the DID and the fullnode no longer lists may have been spent elsewhere
    const unlisted = (await this.o.repos.owners.list(did)).filter((e) => e.status === TokenStatus.Free && !listed.has(e.tokenId)).map((e) => ({ tokenId: e.tokenId }))
    const dropped = await this.checkSpent(unlisted, `a wallet sync of ${did} from fullnode ${peer}`, peer)
    const summary: RecoverySummary = {
      did, fullnode: peer, tokens: taken.length, by_type: {}, by_status: {}, blocks_stored: change.blocks!.length,
      blocks_fetched: fetched.fetchedBlocks, already_held: alreadyHeld, token_ids: taken,
      ...(dropped.length > 0 ? { dropped_spent: dropped.map((d) => ({ token: d.tokenId, txid: d.txid })) } : {})
    }
    for (const id of taken) {
      const rec = change.tokens!.find((t) => t.record.tokenId === id)?.record ?? await this.o.repos.tokens.get(id)
      if (rec === undefined) continue
      const t = (summary.by_type[rec.kind] ??= { count: 0, value: 0 })
      t.count++
      t.value = Math.round((t.value + rbtOf(rec.value)) * 1000) / 1000
      summary.by_status[rec.status] = (summary.by_status[rec.status] ?? 0) + 1
    }
    return summary
  }

  /**
   * Token states reported spent by another transaction (spent-check.ts): those this node holds Free
   * for a local DID have their chains fetched from `peer` (else from the fullnodes), validated, and
   * are dropped from the balance when the chain shows them spent.
   */
  async checkSpent (claims: readonly SpentClaim[], why: string, peer?: string): Promise<DroppedToken[]> {
    const held = await heldClaims(this.o, claims)
    const net = this.o.network()
    if (held.length === 0 || net === undefined) return []
    const peers = peer !== undefined ? [peer] : await net.fullnodes().catch(() => [])
    if (peers.length === 0) {
      this.o.log.warn(`${held.length} token(s) reported spent (${why}), ${held.map((t) => t.tokenId).join(', ')}: no fullnode to check their chains at; they stay in the balance until a wallet sync`)
      return []
    }
    return await dropSpent({ ...this.o, now: this.now }, held, peers.map((p) => ({ name: p, source: net.source(p) })), why)
  }

  /**
   * Checks a fullnode's claim that `tokenId` is pledged: every backing state must be the validated
   * tip of its token, and that block (of the claimed transaction) must list the token as pledged by `did`.
   */
  private checkPledge (fetched: FetchedBundle, tips: Map<string, ChainTip>, did: string, tokenId: string, claim: PledgeClaim | undefined, peer: string): PledgeClaim & { epoch: number } {
    const bad = (why: string): RbtError => new RbtError(ErrorCode.CHAIN_INVALID, `fullnode ${peer} reports token ${tokenId} as pledged, but ${why}`)
    if (claim === undefined || typeof claim.txid !== 'string' || !Array.isArray(claim.backing) || claim.backing.length === 0) throw bad('names no pledge')
    let epoch = 0
    for (const state of claim.backing) {
      if (typeof state !== 'string' || !state.includes('@')) throw bad('a backing state is malformed')
      const [id, blockId] = [state.slice(0, state.indexOf('@')), state.slice(state.indexOf('@') + 1)]
      const tip = tips.get(id)
      if (tip === undefined || tip.blockId !== blockId) throw bad(`${state} is not the latest state of ${id}`)
      const chain = fetched.bundle.chains[id]!
      const block = decodeBlockEnvelope(chain[chain.length - 1]!)
      if (block.content.transInfo.tid !== claim.txid) throw bad(`the block of ${state} belongs to another transaction`)
      if (!(block.content.pledgeDetails?.[did] ?? []).some((p) => p.token === tokenId)) throw bad(`the block of transaction ${claim.txid} does not list it as pledged by ${did}`)
      epoch = block.content.epoch ?? 0
    }
    return { txid: claim.txid, backing: claim.backing, epoch }
  }

  /**
   * One ledger change for a validated bundle: the blocks not yet stored (every chain, ancestors
   * included), contents, a token record per entry of `records` (compare-and-set against what is
   * stored), and a transaction record per tip transaction. `recordsOnly` limits token records.
   */
  private async buildChange (fetched: FetchedBundle, tips: Map<string, ChainTip>, records: Array<{ tokenId: string, status: string, txId?: string }>, origin: string, recordsOnly?: Set<string>, chainsLeft?: ReadonlySet<string>): Promise<LedgerChange> {
    const now = this.now()
    const blocks: StoredBlockInput[] = []
    for (const [id, chain] of Object.entries(fetched.bundle.chains)) {
      if (chainsLeft?.has(id) === true) continue
      const stored = (await this.o.repos.blocks.latest(id))?.number ?? -1
      for (let i = stored + 1; i < chain.length; i++) blocks.push({ record: blockRecordOf(id, decodeBlockEnvelope(chain[i]!), now), envelope: chain[i]! })
    }
    const contents: Record<string, string> = {}
    for (const [id, c] of Object.entries(fetched.bundle.contents)) if (await this.o.repos.tokens.content(id) === undefined) contents[id] = c
    const tokens: NonNullable<LedgerChange['tokens']> = []
    const txs = new Map<string, TransactionRecord>()
    for (const { tokenId, status, txId: pledgeTx } of records) {
      if (recordsOnly !== undefined && !recordsOnly.has(tokenId)) continue
      const tip = tips.get(tokenId)!
      const chain = fetched.bundle.chains[tokenId]!
      const existing = await this.o.repos.tokens.get(tokenId)
      if (existing !== undefined && existing.latestBlockId === tip.blockId && existing.status === status && existing.owner === tip.owner) continue
      const value = tip.value !== undefined ? floatToMilliExact(tip.value) : existing?.value
      if (value === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: the chain states no usable value`)
      const kind = kindName(tokenKindOf(tip.tokenType) ?? 'rbt')
      const genesis = decodeBlockEnvelope(chain[0]!)
      const parent = genesis.content.genesis?.info[tokenId]?.parentId
      const last = decodeBlockEnvelope(chain[chain.length - 1]!)
      const tid = last.content.transInfo.tid ?? sha3Hex(`${origin}:${tokenId}:${tip.blockId}`)
      const record: TokenRecord = {
        tokenId, kind, tokenType: tip.tokenType, value, owner: tip.owner, status: status as TokenRecord['status'],
        latestBlockId: tip.blockId, latestBlockNumber: tip.blockNumber, txId: pledgeTx ?? tid, createdAt: existing?.createdAt ?? now, updatedAt: now,
        ...(parent !== undefined && parent !== '' ? { parent } : {})
      }
      if (kind === 'ft') {
        const m = FT_NAME_RE.exec(genesis.content.transInfo.comment ?? '')
        record.ftName = existing?.ftName ?? m?.[1] ?? ''
        record.creator = existing?.creator ?? genesis.content.owner
      }
      tokens.push({ record, expect: existing === undefined ? { exists: false } : { latestBlockId: existing.latestBlockId } })
      const tx = ingestedTransaction(txs.get(tid) ?? await this.o.repos.transactions.get(tid), tid, last, tip, tokenId, value, now)
      txs.set(tid, tx)
    }
    return { tokens, blocks, contents, transactions: [...txs.values()] }
  }

  // ------------------------------------------------------------------ sync-transaction-chain

  /**
   * Pulls chains this node does not hold from a fullnode: fetched, validated (ancestors included)
   * and stored as blocks only (like the ancestors a receiver keeps), in one commit.
   */
  async pull (tokenIds: string[], fullnode?: string): Promise<{ fullnode: string, blocks: number }> {
    const net = this.net()
    const candidates = fullnode !== undefined && fullnode !== '' ? [await net.peerOf(fullnode)] : await net.fullnodes()
    if (candidates.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `token ${tokenIds[0]!} has no chain on this node and no fullnode was found to pull it from`)
    const failures: RbtError[] = []
    for (const peer of candidates) {
      try {
        const fetched = await fetchBundle(net.source(peer), this.held(), tokenIds)
        const tips = await validateBundleTokens(fetched.bundle, tokenIds, this.o.verifier, this.cache())
        const change = await this.buildChange(fetched, tips, [], `pull:${peer}`)
        await this.o.ledger.commit(change)
        return { fullnode: peer, blocks: change.blocks!.length }
      } catch (e) {
        failures.push(e instanceof RbtError ? e : new RbtError(ErrorCode.PEER_UNREACHABLE, errorMessage(e)))
      }
    }
    const worst = failures.find((f) => f.code === ErrorCode.CHAIN_INVALID) ?? failures.find((f) => f.code === ErrorCode.NOT_FOUND) ?? failures[0]!
    throw new RbtError(worst.code, `chains of ${tokenIds.join(', ')} could not be pulled from ${candidates.length} fullnode(s): ${failures.map((f) => f.message).join('; ')}`)
  }

  /**
   * Ordered chains of the named tokens as this node stores them, without the blocks of excluded
   * transactions, paged by a cursor (never truncated: an answer that stops early says where to go on).
   */
  async transactionChains (req: TxChainRequest): Promise<TxChainResult> {
    if (!isDid(req.did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
    const ids = req.token_ids
    for (const id of ids) if (!isCidV0(id)) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid token id "${id}": expected 46 characters starting with Qm`)
    const missing: string[] = []
    for (const id of ids) if (await this.o.repos.blocks.latest(id) === undefined) missing.push(id)
    if (missing.length > 0) await this.pull(missing, req.fullnode)
    const exclude = new Set(req.exclude_transaction_ids ?? [])
    const limit = Math.max(1, Math.min(req.limit ?? 1000, 10_000))
    let ti = 0
    let from = 0
    if (req.cursor !== undefined && req.cursor !== '') {
      const m = /^(\d+):(\d+)$/.exec(req.cursor)
      if (m === null || Number(m[1]) >= ids.length) throw new RbtError(ErrorCode.INVALID_INPUT, `"${req.cursor}" is not a cursor of this request`)
      ti = Number(m[1]); from = Number(m[2])
    }
    const chains: TxChain[] = []
    let count = 0
    let next = ''
    let examined = 0
    for (; ti < ids.length; ti++, from = 0) {
      if (examined >= limit) { next = `${ti}:${from}`; break }
      const id = ids[ti]!
      const latest = await this.o.repos.blocks.latest(id)
      if (latest === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `token ${id} has no chain on this node`)
      const token = await this.o.repos.tokens.get(id)
      const genesis = await this.o.repos.blocks.get(id, 0)
      const env = genesis !== undefined ? (await this.o.repos.blocks.envelopes([genesis]))[0] : undefined
      const tokenType = token?.tokenType ?? (env !== undefined ? Object.values(decodeBlockEnvelope(env).content.transInfo.tokens)[0]?.tokenType : undefined) ?? -1
      const chain: TxChain = { token_id: id, token_type: tokenType, kind: token?.kind ?? kindName(tokenKindOf(tokenType) ?? 'rbt'), length: latest.number + 1, blocks: [] }
      chains.push(chain)
      while (from <= latest.number) {
        if (examined >= limit) { next = `${ti}:${from}`; break }
        const recs = await this.o.repos.blocks.chain(id, { fromNumber: from, limit: Math.min(256, limit - examined) })
        if (recs.length === 0) break
        const keep = recs.filter((r) => r.txId === undefined || !exclude.has(r.txId))
        const envs = await this.o.repos.blocks.envelopes(keep)
        keep.forEach((r, i) => { chain.blocks.push(chainDumpBlock(r, envs[i]!)) })
        count += keep.length
        examined += recs.length
        from = recs[recs.length - 1]!.number + 1
      }
      if (next !== '') break
    }
    return { did: req.did, chains, count, next_cursor: next }
  }
}
