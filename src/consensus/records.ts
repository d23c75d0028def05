import type { CreditSignature, PledgeToken } from '../tokenchain/block.js'
import type { NftOp } from './types.js'
import type { Ledger, LedgerWriter } from './ports.js'

export { stateKey } from './types.js'

/** Sender's durable record of one outgoing transfer (collection cs-outgoing, key txid). */
export interface OutgoingRecord {
  txid: string
  state: 'PREPARING' | 'SIGNING' | 'COMMITTING' | 'COMMITTED' | 'ABORTED'
  sender: string
  receiver: string
  amountMilli: number
  memo: string
  epoch: number
  tokens: string[]
  /** base64 contract envelope (stored beside the record when `contractApart`, see `putOutgoing`) */
  contract: string
  /** the stored record leaves its contract to cs-outgoing-contract */
  contractApart?: true
  asked: string[]
  /**
   * Quorums sent a PREPARE (recorded with the votes; absent on records written before it existed).
   * A quorum never asked holds nothing, so after the commit only these are told to drop their vote.
   */
  contacted?: string[]
  yes: string[]
  signers: string[]
  /** yes votes (credit signatures and pledges), from SIGNING on */
  votes?: unknown[]
  /** base64 fully signed block, from COMMITTING on (stored beside the record when `blockApart`, see `putOutgoing`) */
  block?: string
  /** the stored record leaves its block to cs-outgoing-block */
  blockApart?: true
  /**
   * the signers' pledge evidence (chains as base64 blocks), delivered with the block: records
   * written before the evidence was kept by digest (`evidence`); from COMMITTING on
   */
  pledges?: { chains: Record<string, string[]>, contents: Record<string, string> }
  /**
   * the signers' pledge evidence by digest (its entries in cs-evidence, see evidence-store.ts),
   * delivered with the block; from COMMITTING until the delivery
   */
  evidence?: EvidenceRef
  /** the receiver's node accepts only these signers (its strict rule), as its probe answered */
  receiverQuorums?: string[]
  /** quorums told the outcome */
  notified: string[]
  reason?: string
  /** NFT transactions only */
  nft?: NftOp
  /** transactions carrying FTs: what was asked */
  fts?: Array<{ name: string, creator: string, count: number }>
  createdAt: number
  updatedAt: number
}

/** A quorum's durable record of its vote on one transaction (cs-votes, key `<quorumDid>/<txid>`). */
export interface VoteRecord {
  txid: string
  quorumDid: string
  state: 'RESERVED' | 'SIGNED' | 'COMMITTED' | 'RELEASED'
  sender: string
  receiver: string
  senderPeer: string
  amountMilli: number
  /**
   * token states this vote holds: `<tokenId>@<blockId>`, each token's last quorum-signed state
   * (ChainTip.anchorBlockId): the key of its held state, claim and spent marker
   */
  states: string[]
  /** the states the contract spends (its tips), in the order of `states`: only when some differ from them */
  spends?: string[]
  /** the burnt ancestors the states rest on, claimed with them on every path (absent on older records) */
  burns?: Array<import('./ports.js').BurnClaim>
  /** states before the contract's tip (owner-only tips), by state hash: the blocks from each to the tip (hex), shown to the arbiters */
  paths?: Record<string, string[]>
  pledge: PledgeToken[]
  pledgeMilli: number
  credit: CreditSignature
  blockHash?: string
  signature?: string
  reason?: string
  /** NFT transactions only */
  nft?: NftOp
  /** the sender-signed contract (hex), kept by quorums whose designated checker claimed at SIGN (records from before the sender's claim) */
  contract?: string
  /** the quorum's claim of the vote's states (claims on): its nonce and its signature over claimDigest, shown by the sender to the arbiters */
  claimNonce?: string
  claimSig?: string
  /** the secret whose hash is `claimNonce`: revealed with this quorum's signature, its consent to seal the claim (docs/protocol.md, "Seals") */
  claimSecret?: string
  /** transactions carrying FTs: what was asked */
  fts?: Array<{ name: string, creator: string, count: number }>
  createdAt: number
  updatedAt: number
}

/** A quorum's pledge kept after a commit (cs-pledges, key `<quorumDid>/<txid>`). */
export interface PledgeRecord {
  txid: string
  quorumDid: string
  tokens: string[]
  /** token block ids created by the transaction: when any moves on, the pledge is released */
  newBlockIds: string[]
  releaseAt: number
}

/**
 * Index entries of a pledge (cs-pledge-index, value: the pledge key `<quorumDid>/<txid>`), written
 * and deleted in the same commit as the pledge: `s|<state>|<pledge key>` for each state the pledge
 * backs, so a spend finds the pledges it releases without reading the others, and
 * `t|<release time, 15 digits>|<pledge key>`, so a sweep reads only the pledges that are due.
 */
export const pledgeIndexKeys = (p: PledgeRecord): string[] => {
  const key = `${p.quorumDid}/${p.txid}`
  return [...p.newBlockIds.map((s) => `s|${s}|${key}`), `${pledgeDuePrefix}${String(Math.max(0, Math.floor(p.releaseAt))).padStart(15, '0')}|${key}`]
}
export const pledgeStatePrefix = (state: string): string => `s|${state}|`
export const pledgeDuePrefix = 't|'
/** Upper bound (exclusive) of the due entries of pledges released at or before `ms`. */
export const pledgeDueUntil = (ms: number): string => `${pledgeDuePrefix}${String(Math.max(0, Math.floor(ms) + 1)).padStart(15, '0')}|`
/** Marks a data dir whose pledges written before the index existed were indexed. */
export const PLEDGE_INDEX_VERSION_KEY = 'v|1'

/**
 * Pledge evidence named by digest: each pledged token's chain as the sha3-256 hex digests of its
 * blocks' bytes (`chains`); the chains of their ancestry and every token's content (as the digest
 * of its text) the same way in one entry per signer, named by the digest of its JSON text
 * (`ancestry`; see evidence-store.ts). `contents` names contents outside those entries: none in
 * what this node writes now, read all the same.
 */
export interface EvidenceRef { chains: Record<string, string[]>, contents: Record<string, string>, ancestry?: string[] }

export interface IncomingRecord { txid: string, receiver: string, sender: string, at: number }

export const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64')
export const unb64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'))

/**
 * The records recovery and the sweeps still have work on, indexed apart (cs-outgoing-open, key
 * txid; cs-votes-open, key as in cs-votes) and written in the batch that writes the record, so a
 * pass reads the few open ones instead of a node's whole history (a periodic full scan cost a
 * third of a second of CPU at 300 past transfers, and grew with every one).
 */
const OUTGOING_OPEN = 'cs-outgoing-open'
const VOTES_OPEN = 'cs-votes-open'
/** A sender's contracts, by txid, beside their records (see `putOutgoing`). */
const OUTGOING_CONTRACT = 'cs-outgoing-contract'
/** A sender's signed blocks, by txid, beside their records (see `putOutgoing`). */
const OUTGOING_BLOCK = 'cs-outgoing-block'

/** Nothing left to do for this transfer: aborted, or committed and every contacted quorum told. */
const isSettled = (r: OutgoingRecord): boolean => r.state === 'ABORTED' || (r.state === 'COMMITTED' && (r.contacted ?? r.asked).every((q) => r.notified.includes(q)))

/** A vote a sweep looks at: reserved or signed, not yet committed or released. */
const isOpenVote = (state: VoteRecord['state']): boolean => state === 'RESERVED' || state === 'SIGNED'

/**
 * A delivered transfer's record without the signers' pledge evidence: it served only the delivery,
 * and the record is written again at every later step (COMMITTED, each quorum told). The evidence
 * of a one-part payment was about 150 KB, three times the rest of the record, and writing it three
 * times made a paying node's LevelDB write (and compact) about 900 KB per payment.
 */
export function withoutEvidence (rec: OutgoingRecord): OutgoingRecord {
  const { pledges: _evidence, evidence: _byHash, ...rest } = rec
  return rest
}

/**
 * Writes a sender's record and its entry in the open index, in the caller's batch. The contract is
 * kept beside the record (cs-outgoing-contract), written once with the PREPARING record
 * (`withContract`), not again at every later step: a 300-part transfer's contract is about 95 KB
 * of the record, which is written five or six times. The signed block likewise (cs-outgoing-block),
 * written once with the COMMITTING record (`withBlock`): 6.6 KB of a one-part payment's record,
 * which was written again at COMMITTED and when the last quorum was told. `readOutgoing` puts both back.
 */
export function putOutgoing (w: LedgerWriter, rec: OutgoingRecord, opts: { withContract?: boolean, withBlock?: boolean } = {}): void {
  const { contract, block, ...stored } = rec
  // a record an older node wrote carries its contract (or block) inline (no `contractApart`,
  // `blockApart`): the first write again puts it beside the record, or it would be lost
  if (opts.withContract === true || rec.contractApart !== true) w.putRecord(OUTGOING_CONTRACT, rec.txid, contract)
  const blockApart = block !== undefined || rec.blockApart === true
  if (block !== undefined && (opts.withBlock === true || rec.blockApart !== true)) w.putRecord(OUTGOING_BLOCK, rec.txid, block)
  const settled = isSettled(rec)
  // the yes votes serve the sign round only (about 3 KB of a 12 KB record of a one-part payment):
  // once the block is signed (COMMITTING on) or the transfer aborted, the record is written without them
  const { votes: _votes, ...kept } = stored
  const signed = rec.state !== 'PREPARING' && rec.state !== 'SIGNING'
  w.putRecord('cs-outgoing', rec.txid, { ...(signed ? kept : stored), contractApart: true, ...(blockApart ? { blockApart: true } : {}) })
  if (settled) w.delRecord(OUTGOING_OPEN, rec.txid)
  else w.putRecord(OUTGOING_OPEN, rec.txid, 1)
}

/** A sender's record with its contract and block (records written before they were kept beside them carry them inline). */
export async function readOutgoing (ledger: Pick<Ledger, 'record'>, txid: string): Promise<OutgoingRecord | undefined> {
  return await withContract(ledger, await ledger.record<OutgoingRecord>('cs-outgoing', txid))
}

async function withContract (ledger: Pick<Ledger, 'record'>, r: OutgoingRecord | undefined): Promise<OutgoingRecord | undefined> {
  if (r === undefined) return r
  const contract = typeof r.contract === 'string' ? r.contract : await ledger.record<string>(OUTGOING_CONTRACT, r.txid) ?? ''
  const block = r.blockApart === true && r.block === undefined ? await ledger.record<string>(OUTGOING_BLOCK, r.txid) : r.block
  return { ...r, contract, ...(block !== undefined ? { block } : {}) }
}

/** Writes a quorum's vote and its entry in the open index, in the caller's batch. */
export function putVote (w: LedgerWriter, key: string, vote: VoteRecord): void {
  w.putRecord('cs-votes', key, vote)
  if (isOpenVote(vote.state)) w.putRecord(VOTES_OPEN, key, 1)
  else w.delRecord(VOTES_OPEN, key)
}

/**
 * The records an open index names that are still open (`isOpen` decides), oldest key first. An
 * entry whose record is gone or settled (never left by this code; a store rebuilt, say) is dropped,
 * best effort: a later pass drops it when this write fails. A data dir from before the index gets
 * it built once, from a full scan of the records, marked done in cs-meta in the same batch.
 */
async function openRecords<T> (ledger: Ledger, index: typeof OUTGOING_OPEN | typeof VOTES_OPEN, records: 'cs-outgoing' | 'cs-votes', isOpen: (r: T) => boolean): Promise<T[]> {
  const out: T[] = []
  const gone: string[] = []
  for (const k of await openKeys(ledger, index, records, isOpen)) {
    const r = await ledger.record<T>(records, k)
    if (r === undefined || !isOpen(r)) gone.push(k)
    else out.push(r)
  }
  if (gone.length > 0) await ledger.commit((w) => { for (const k of gone) w.delRecord(index, k) }).catch(() => {})
  return out
}

/** The sender's records not settled yet (the transfers recovery still has work on), from their open index. */
export async function openOutgoing (ledger: Ledger): Promise<OutgoingRecord[]> {
  const open = await openRecords<OutgoingRecord>(ledger, OUTGOING_OPEN, 'cs-outgoing', (r) => !isSettled(r))
  return await Promise.all(open.map(async (r) => (await withContract(ledger, r))!))
}

/** The quorums' votes still reserved or signed (what the sweep asks senders about), from their open index. */
export async function openVotes (ledger: Ledger): Promise<VoteRecord[]> {
  return await openRecords<VoteRecord>(ledger, VOTES_OPEN, 'cs-votes', (v) => isOpenVote(v.state))
}

async function openKeys<T> (ledger: Ledger, index: typeof OUTGOING_OPEN | typeof VOTES_OPEN, records: 'cs-outgoing' | 'cs-votes', isOpen: (r: T) => boolean): Promise<string[]> {
  if (await ledger.record('cs-meta', index) === undefined) {
    const open: string[] = []
    for await (const [k, r] of ledger.records<T>(records)) if (isOpen(r)) open.push(k)
    await ledger.commit((w) => {
      for (const k of open) w.putRecord(index, k, 1)
      w.putRecord('cs-meta', index, 1)
    })
  }
  const keys: string[] = []
  for await (const [k] of ledger.records(index)) keys.push(k)
  return keys
}

/** Key of a quorum's vote (and of the pledge it becomes) for a transaction, in cs-votes and cs-pledges. */
export const voteKey = (quorumDid: string, txid: string): string => `${quorumDid}/${txid}`
