/**
 * What a transaction locks before consensus (the sender's first durable step): the input's tokens
 * chosen and, when no set of them adds up, one split; the contract built and signed; the quorums
 * chosen; and the tokens (or the NFT) Locked in the same commit as the PREPARING record.
 */
import { ContractType, PledgeMode } from '../tokenchain/types.js'
import { createContract, encodeContractEnvelope, transactionId, withContractSignature, type ContractContent } from '../tokenchain/contract.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import { peekBlockEnvelope } from '../tokenchain/block.js'
import { ErrorCode, RbtError } from '../util/errors.js'
import { splitToken } from './part-split.js'
import type { Clock, ConsensusSigner, Ledger, TokenState } from './ports.js'
import { MIN_QUORUM_SIGNATURES, selectQuorums } from './quorum-selection.js'
import { b64, putOutgoing, type OutgoingRecord } from './records.js'
import { selectTokens, type Holding } from '../tokens/select.js'
import { freeTokensById } from './wallet-tokens.js'
import { isNftTokenType, opTokenType, type NftOp } from './nft.js'
import { scContractFields, scExecutable } from './smart-contract.js'

export interface TransferInput {
  sender: string
  receiver: string
  amountMilli: number
  memo: string
  /** quorum DIDs to choose from (the node's quorum list) */
  quorums: string[]
  /** FTs sent in the same transaction (docs/protocol.md, "FTs") */
  fts?: FtSpend[]
  /**
   * A self transfer (receiver = sender, the reference's initiate-self-transfer): exactly these Free
   * RBT of the sender are spent to the sender again, with no split, so the quorums' pledges that
   * backed their states are released and new ones made. `amountMilli` must be their total.
   */
  selfTokens?: string[]
}

/** `count` Free FTs named `name` by `creator`. */
export interface FtSpend { name: string, creator: string, count: number }

export interface NftInput {
  initiator: string
  /** owner after the transaction: the initiator for a deploy or an execution that keeps the NFT */
  receiver: string
  op: NftOp
  memo: string
  quorums: string[]
}

/** What locking needs of the sender. */
export interface LockContext {
  ledger: Ledger
  clock: Clock
  /** test builds only: called after each durable step */
  fault: (step: string) => void
  /** told in the same turn as the commit that locked `txid` (the sender's recovery leaves it alone from then on) */
  locked: (txid: string) => void
}

/**
 * A transfer's PREPARING record: tokens chosen (a token split when no set adds up), the contract
 * signed, the quorums chosen, and the tokens Locked with the record in one commit.
 */
export async function lockTokens (ctx: LockContext, input: TransferInput, signer: ConsensusSigner): Promise<OutgoingRecord> {
  const now = ctx.clock.now()
  // chosen from the owner index; only the chosen tokens' records are read
  const held = input.selfTokens !== undefined ? [] : (await ctx.ledger.holdings(input.sender, 'Free')).map((h) => ({ tokenId: h.tokenId, value: h.valueMilli }))
  const sel = input.selfTokens !== undefined
    ? { take: input.selfTokens.map((tokenId) => ({ tokenId, value: 0 })), split: undefined }
    : input.amountMilli > 0 ? await select(ctx.ledger, held, input.amountMilli) : { take: [], split: undefined }
  // their contents stay where they are: locking moves a token, it does not rewrite what it is
  const byId = await freeTokensById(ctx.ledger, input.sender, [...sel.take.map((h) => h.tokenId), ...(sel.split !== undefined ? [sel.split.token.tokenId] : [])], { content: false })
  let tokens = sel.take.map((h) => byId.get(h.tokenId)!)
  if (sel.split !== undefined) {
    const token = byId.get(sel.split.token.tokenId)!
    const chain = await ctx.ledger.chain(token.tokenId)
    const res = await splitToken(token, chain[chain.length - 1], sel.split.need, signer, now)
    await ctx.ledger.commit((w) => {
      w.putToken(res.parent)
      w.putBlock(token.tokenId, res.burnBlock.number, res.burnBlock.envelope)
      for (const p of res.parts) { w.putToken(p.token); w.putBlock(p.token.tokenId, 0, p.genesis) }
    })
    ctx.fault('split')
    tokens = [...tokens, res.parts[0].token]
  }
  const fts = await selectFts(ctx, input)
  tokens = [...tokens, ...fts]
  const totalMilli = tokens.reduce((sum, t) => sum + t.valueMilli, 0)
  if (input.selfTokens !== undefined && totalMilli !== input.amountMilli) throw new RbtError(ErrorCode.CONFLICT, 'the tokens of the self transfer changed; retry')
  const transTokens: Record<string, { tokenType: number, tokenValue: number, owner: string, blockId: string }> = {}
  for (const t of tokens) transTokens[t.tokenId] = { tokenType: t.tokenType, tokenValue: t.valueMilli / 1000, owner: input.sender, blockId: t.latestBlockId }
  const { envelope, txid } = await signedContract(signer, input.sender, {
    type: fts.length > 0 ? ContractType.FT : ContractType.RBT_DIRECT,
    pledgeMode: PledgeMode.PERIODIC,
    transInfo: { sender: input.sender, receiver: input.receiver, comment: input.memo, transTokens },
    totalRbts: totalMilli / 1000
  })
  const states = tokens.map((t) => ({ t, hash: tokenStateHash(t.tokenId, t.latestBlockId) })).sort((x, y) => x.hash < y.hash ? -1 : x.hash > y.hash ? 1 : 0)
  const anchor = states[0]?.hash ?? ''
  const asked = askedQuorums(input.quorums, anchor, [input.sender, input.receiver], input.sender, states.length === 0 ? [] : await lastSigners(ctx.ledger, states[0].t.tokenId))
  const rec: OutgoingRecord = {
    txid,
    state: 'PREPARING',
    sender: input.sender,
    receiver: input.receiver,
    amountMilli: totalMilli,
    memo: input.memo,
    epoch: Math.floor(now / 1000),
    tokens: tokens.map((t) => t.tokenId),
    ...(fts.length > 0 ? { fts: input.fts } : {}),
    contract: b64(envelope),
    contractApart: true,
    asked,
    yes: [],
    signers: [],
    notified: [],
    createdAt: now,
    updatedAt: now
  }
  // tokens may have changed while the contract was signed (a prompt can take minutes)
  const fresh = await ctx.ledger.tokensById(tokens.map((t) => t.tokenId), { content: false })
  for (const [i, f] of fresh.entries()) {
    if (f === undefined || f.status !== 'Free' || f.owner !== input.sender || f.latestBlockId !== tokens[i].latestBlockId) {
      throw new RbtError(ErrorCode.CONFLICT, `token ${tokens[i].tokenId} changed while the transfer was prepared; retry`)
    }
  }
  // the prompt may have taken minutes: the record's age counts from the lock
  rec.updatedAt = ctx.clock.now()
  await ctx.ledger.commit((w) => {
    for (const t of fresh as TokenState[]) w.putToken({ ...t, status: 'Locked', txid, updatedAt: now })
    putOutgoing(w, rec, { withContract: true })
  })
  ctx.locked(txid)
  return rec
}

/**
 * The first `count` Free FTs of each name and creator asked for; all or nothing. FTs are taken in
 * the order of their latest block, so units that share a block (a genesis group, an earlier
 * transfer) travel together and quorums check few distinct blocks. They are chosen on the free-FT
 * index, so only the chosen records are read, however many FTs the DID holds.
 */
async function selectFts (ctx: LockContext, input: TransferInput): Promise<TokenState[]> {
  const out: TokenState[] = []
  for (const f of input.fts ?? []) {
    const ids = await ctx.ledger.freeFts(input.sender, f.name, f.creator, f.count)
    if (ids.length < f.count) throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `insufficient FT balance: ${ids.length} free "${f.name}" FTs of ${f.creator}, ${f.count} asked`)
    const byId = await freeTokensById(ctx.ledger, input.sender, ids)
    out.push(...ids.map((id) => byId.get(id)!))
  }
  return out
}

/**
 * selectTokens, with the ancestry depth of the tokens tied for the split (the same value as the
 * token it chose) looked up, so the shallowest of them is cut. Only those few are read, up to 32
 * ancestors each: depth costs nothing per transfer (ancestors are remembered), this keeps the
 * wallet's parts shallow where it is free to.
 */
async function select (ledger: Ledger, held: Holding[], amountMilli: number): Promise<ReturnType<typeof selectTokens>> {
  const sel = selectTokens(held, amountMilli)
  const pick = sel.split?.token
  // whole tokens have no ancestors
  if (pick === undefined || pick.value >= 1000) return sel
  const ties = held.filter((h) => h.value === pick.value).slice(0, 8)
  if (ties.length < 2) return sel
  const depth = new Map<string, number>()
  for (const t of ties) {
    let d = 0
    for (let cur = await ledger.token(t.tokenId); cur?.parentId !== undefined && d < 32; cur = await ledger.token(cur.parentId)) d++
    depth.set(t.tokenId, d)
  }
  return selectTokens(held.map((h) => depth.has(h.tokenId) ? { ...h, depth: depth.get(h.tokenId)! } : h), amountMilli)
}

/**
 * An NFT operation's PREPARING record: the NFT checked for the operation, the contract signed,
 * the quorums chosen, and the NFT Locked with the record in one commit.
 */
export async function lockNft (ctx: LockContext, input: NftInput, signer: ConsensusSigner): Promise<OutgoingRecord> {
  const now = ctx.clock.now()
  const { op, initiator } = input
  const id = op.nftId
  const current = await ctx.ledger.token(id)
  let blockId = ''
  if (op.op === 'deploy') {
    if (op.parentId !== undefined) {
      const parent = await ctx.ledger.token(op.parentId)
      if (parent === undefined || !isNftTokenType(parent.tokenType) || parent.latestBlockId === '') throw new RbtError(ErrorCode.NOT_FOUND, `parent NFT ${op.parentId} is not deployed on this node`)
      if (parent.owner !== initiator || parent.status === 'Transferred') throw new RbtError(ErrorCode.FORBIDDEN, `${initiator} does not own the parent NFT ${op.parentId}`)
      if (current !== undefined) throw new RbtError(ErrorCode.CONFLICT, `child NFT ${id} exists already`)
    } else {
      if (current === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `NFT ${id} was not created on this node (POST /svc/v1/nfts/generate)`)
      if (current.owner !== initiator) throw new RbtError(ErrorCode.FORBIDDEN, `NFT ${id} was created by ${current.owner}, not by ${initiator}`)
      if (current.status !== 'Generated') throw new RbtError(ErrorCode.CONFLICT, `NFT ${id} is already deployed (${current.status})`)
    }
  } else if (op.sc !== undefined) {
    blockId = scExecutable(current, op)
  } else {
    if (current === undefined || !isNftTokenType(current.tokenType) || current.latestBlockId === '') throw new RbtError(ErrorCode.NOT_FOUND, `NFT ${id} is not deployed or not known on this node`)
    if (current.owner !== initiator || current.status === 'Transferred') throw new RbtError(ErrorCode.FORBIDDEN, `${initiator} is not the owner of NFT ${id} (the owner is ${current.owner})`)
    if (current.status !== 'Free') throw new RbtError(ErrorCode.CONFLICT, `NFT ${id} is ${current.status}: another transaction holds it; retry`)
    blockId = current.latestBlockId
  }
  const transTokens = { [id]: { tokenType: opTokenType(op), tokenValue: op.valueMilli / 1000, owner: initiator, ...(blockId !== '' ? { blockId } : {}) } }
  const sc = op.sc !== undefined ? scContractFields(op, initiator) : undefined
  const { envelope, txid } = await signedContract(signer, initiator, {
    type: sc !== undefined ? sc.type : op.op === 'deploy' ? ContractType.NFT_DEPLOY : ContractType.NFT_EXECUTE,
    pledgeMode: PledgeMode.PERIODIC,
    transInfo: { sender: initiator, receiver: input.receiver, comment: input.memo, transTokens, ...(sc !== undefined ? sc.fields : { nft: id, nftData: op.data }) },
    totalRbts: op.valueMilli / 1000
  })
  const asked = askedQuorums(input.quorums, tokenStateHash(id, blockId), [initiator, input.receiver], initiator)
  const rec: OutgoingRecord = {
    txid, state: 'PREPARING', sender: initiator, receiver: input.receiver, amountMilli: op.valueMilli, memo: input.memo,
    epoch: Math.floor(now / 1000), tokens: [id], contract: b64(envelope), contractApart: true, asked, yes: [], signers: [], notified: [], nft: op, createdAt: now, updatedAt: now
  }
  // the NFT may have changed while the contract was signed
  const fresh = await ctx.ledger.token(id)
  const unchanged = op.sc !== undefined && op.op === 'execute'
    ? fresh !== undefined && fresh.status !== 'Locked' && fresh.latestBlockId === blockId
    : op.op === 'execute'
    ? fresh !== undefined && fresh.status === 'Free' && fresh.owner === initiator && fresh.latestBlockId === blockId
    : op.parentId !== undefined ? fresh === undefined : fresh?.status === 'Generated'
  if (!unchanged) throw new RbtError(ErrorCode.CONFLICT, `NFT ${id} changed while the transaction was prepared; retry`)
  await ctx.ledger.commit((w) => {
    if (fresh !== undefined) w.putToken({ ...fresh, status: 'Locked', txid, updatedAt: now })
    putOutgoing(w, rec, { withContract: true })
  })
  ctx.locked(txid)
  return rec
}

/** The contract signed by `did` as an envelope, and its transaction id. */
async function signedContract (signer: ConsensusSigner, did: string, content: ContractContent): Promise<{ envelope: Uint8Array, txid: string }> {
  const unsigned = createContract(content)
  const sig = await signer.signHash(unsigned.hash)
  const envelope = encodeContractEnvelope(withContractSignature(unsigned, did, sig.keySig, sig.shareSig))
  return { envelope, txid: transactionId(envelope) }
}

/** Who signed the last block of a token's stored chain (none for an unknown or empty chain). */
async function lastSigners (ledger: Pick<Ledger, 'chains'>, tokenId: string): Promise<string[]> {
  const [chain] = await ledger.chains([tokenId])
  if (chain === undefined || chain.length === 0) return []
  try { return peekBlockEnvelope(chain[chain.length - 1]).signers } catch { return [] }
}

/** The quorums a transaction asks, in order; refused when fewer than can sign it. */
function askedQuorums (quorums: string[], anchor: string, parties: string[], sender: string, anchorSigners: string[] = []): string[] {
  const asked = selectQuorums(quorums, anchor, parties, anchorSigners, sender)
  if (asked.length < MIN_QUORUM_SIGNATURES) {
    throw new RbtError(ErrorCode.CONSENSUS_FAILED, `not enough quorums: ${asked.length} usable in the quorum list, ${MIN_QUORUM_SIGNATURES} needed (add quorums with addquorum)`)
  }
  return asked
}
