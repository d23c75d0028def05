import { decodeBlockEnvelope, formatBlockId, type Block } from '../../tokenchain/block.js'
import { floatToMilliExact } from '../../tokenchain/amount.js'
import { TokenType, TransactionType } from '../../tokenchain/types.js'
import type { BatchOp, KvStore } from '../../storage/kv-store.js'
import type { TokenLedger, LedgerChange, StoredBlockInput } from '../../storage/token-ledger.js'
import type { TokenRepositories } from '../../storage/token-repositories.js'
import type { BlockRecord, TokenKindName, TokenRecord, TransactionRecord as StoredTx } from '../../storage/token-records.js'
import type { ConsensusCollection, KeyRange, Ledger, LedgerWriter, TokenState, TokenStatus, TransactionRecord } from '../../consensus/ports.js'

const kindOf = (tokenType: number): TokenKindName =>
  tokenType === TokenType.PART || tokenType === TokenType.TEST_PART
    ? 'part'
    : tokenType === TokenType.NFT || tokenType === TokenType.TEST_NFT
      ? 'nft'
      : tokenType === TokenType.SMART_CONTRACT || tokenType === TokenType.TEST_SMART_CONTRACT ? 'sc' : tokenType === TokenType.FT ? 'ft' : 'rbt'

function toState (r: TokenRecord, content?: string): TokenState {
  return {
    tokenId: r.tokenId,
    tokenType: r.tokenType,
    valueMilli: r.value,
    owner: r.owner,
    status: r.status as TokenStatus,
    latestBlockId: r.latestBlockId,
    parentId: r.parent,
    content,
    txid: r.txId,
    ...(r.ftName !== undefined ? { ftName: r.ftName, creator: r.creator } : {}),
    updatedAt: r.updatedAt
  }
}

function blockRecord (tokenId: string, b: Block): Omit<BlockRecord, 'bodyKey'> {
  const e = b.content.transInfo.tokens[tokenId]
  const number = Number(e?.blockNumber ?? 0)
  const t = b.content.transInfo
  const rec: Omit<BlockRecord, 'bodyKey'> = {
    tokenId, number, blockId: formatBlockId(number, b.hash), hash: b.hash, transactionType: b.content.transactionType,
    owner: b.content.owner, signers: Object.keys(b.signatures).sort(), storedAt: Date.now()
  }
  if (t.tid !== undefined) rec.txId = t.tid
  if (t.sender !== undefined) rec.sender = t.sender
  if (t.receiver !== undefined) rec.receiver = t.receiver
  if (t.comment !== undefined) rec.comment = t.comment
  const v = b.content.tokenValue !== undefined ? floatToMilliExact(b.content.tokenValue) : undefined
  if (v !== undefined) rec.value = v
  if (b.content.childTokens.length > 0) rec.childTokens = [...b.content.childTokens]
  if (b.content.epoch !== undefined) rec.epoch = b.content.epoch
  return rec
}

const NONE: ReadonlySet<string> = new Set()

const kindOfTx = (role: TransactionRecord['role']): StoredTx['kind'] => role === 'sender' ? 'transfer' : role === 'receiver' ? 'receive' : 'pledge'

/**
 * The consensus Ledger port over the node's token storage: token records, chains and transactions
 * go through TokenLedger (which keeps the owner index and balances in the same batch); consensus's
 * own records ride in the same atomic batch as extra operations.
 */
export function consensusLedger (store: KvStore, ledger: TokenLedger, repos: TokenRepositories, staked: () => ReadonlySet<string> = () => NONE): Ledger {
  const bodies = new Map<string, Uint8Array>()
  // a token an arbiter seat of this node stakes is no Free token to the transfers and pledges: it is
  // seen as Pledged (docs/protocol.md, "The arbiter committee"), its record unchanged
  const asStaked = (t: TokenState | undefined, held: ReadonlySet<string>): TokenState | undefined => t !== undefined && t.status === 'Free' && held.has(t.tokenId) ? { ...t, status: 'Pledged' } : t
  const recordCol = (c: ConsensusCollection): ReturnType<KvStore['collection']> => store.collection(c)
  // the states of stored tokens in the order asked; FTs carry no token content, so none is read for them
  const statesOf = async (ids: readonly string[], opts?: { content?: boolean }): Promise<Array<TokenState | undefined>> => {
    const recs = ids.length === 0 ? [] : await repos.tokens.getMany([...ids])
    const racBacked = opts?.content === false ? [] : recs.flatMap((r) => r !== undefined && r.kind !== 'ft' ? [r.tokenId] : [])
    const contents = racBacked.length === 0 ? [] : await repos.tokens.contents(racBacked)
    const contentOf = new Map(racBacked.map((id, i) => [id, contents[i]]))
    const held = staked()
    return recs.map((r) => r === undefined ? undefined : asStaked(toState(r, contentOf.get(r.tokenId)), held))
  }
  // a block shared by many tokens comes back as one array, so it is decoded (and sent) once
  const envelopesOf = async (lists: BlockRecord[][]): Promise<Uint8Array[][]> => {
    const missing = [...new Map(lists.flat().filter((r) => !bodies.has(r.bodyKey)).map((r) => [r.bodyKey, r])).values()]
    const fetched = await repos.blocks.envelopes(missing)
    missing.forEach((r, i) => { bodies.set(r.bodyKey, fetched[i]) })
    // read before trimming: the trim may drop a body of these very chains that was cached earlier
    const out = lists.map((recs) => recs.map((r) => bodies.get(r.bodyKey)!))
    while (bodies.size > 512) bodies.delete(bodies.keys().next().value!)
    return out
  }
  return {
    token: async (id) => {
      const r = await repos.tokens.get(id)
      return r === undefined ? undefined : asStaked(toState(r, await repos.tokens.content(id)), staked())
    },
    tokensOf: async (did, status, family) => {
      const entries = await repos.owners.list(did, family ?? 'rbt', status)
      return (await statesOf(entries.map((e) => e.tokenId))).filter((t): t is TokenState => t !== undefined && (status === undefined || t.status === status))
    },
    holdings: async (did, status) => {
      const held = (await repos.owners.list(did, 'rbt', status)).map((e) => ({ tokenId: e.tokenId, valueMilli: e.value }))
      const s = staked()
      return status !== 'Free' || s.size === 0 ? held : held.filter((h) => !s.has(h.tokenId))
    },
    freeFts: async (did, name, creator, count) => await repos.owners.freeFts(did, name, creator, count),
    tokensById: statesOf,
    chain: async (id) => (await envelopesOf([await repos.blocks.chain(id)]))[0],
    chains: async (ids) => {
      // by key where the token record tells the chain's length (a read of a few microseconds each),
      // a range scan (a thread-pool round trip or two) for the rest
      const recs = ids.length === 0 ? [] : await repos.tokens.getMany([...ids])
      const tips = recs.flatMap((r) => r === undefined ? [] : [{ tokenId: r.tokenId, latestBlockNumber: r.latestBlockNumber }])
      const byKey = await repos.blocks.chainsTo(tips)
      const found = new Map(tips.map((t, i) => [t.tokenId, byKey[i]]))
      const lists = await Promise.all(ids.map(async (id) => found.get(id) ?? await repos.blocks.chain(id)))
      return await envelopesOf(lists)
    },
    tipSigners: async (ids) => {
      const recs = ids.length === 0 ? [] : await repos.tokens.getMany([...ids])
      const moved = recs.filter((r): r is TokenRecord => r !== undefined && r.latestBlockNumber >= 1)
      const tips = await repos.blocks.getMany(moved.map((r) => ({ tokenId: r.tokenId, number: r.latestBlockNumber })))
      const signers = new Map(moved.map((r, i) => [r.tokenId, tips[i]?.blockId === r.latestBlockId ? tips[i]!.signers : undefined]))
      return ids.map((id) => signers.get(id))
    },
    record: async <T>(c: ConsensusCollection, key: string) => {
      if (c === 'cs-contents') return await repos.tokens.content(key) as T | undefined
      return await recordCol(c).get(key) as T | undefined
    },
    recordsByKey: async <T>(c: ConsensusCollection, keys: readonly string[]) => {
      if (keys.length === 0) return []
      if (c === 'cs-contents') return await repos.tokens.contents([...keys]) as Array<T | undefined>
      return await recordCol(c).getMany([...keys]) as Array<T | undefined>
    },
    records: <T>(c: ConsensusCollection, range?: KeyRange) => recordCol(c).entries({
      ...(range?.gte !== undefined ? { gte: range.gte } : {}), ...(range?.lt !== undefined ? { lt: range.lt } : {})
    }) as AsyncIterable<[string, T]>,
    commit: async (build) => {
      const tokens = new Map<string, TokenRecord>()
      const blocks: StoredBlockInput[] = []
      const transactions: StoredTx[] = []
      const contents: Record<string, string> = {}
      const extra: BatchOp[] = []
      const participants: NonNullable<LedgerChange['txParticipants']> = []
      const pendingTokens: TokenState[] = []
      const w: LedgerWriter = {
        putToken: (t) => { pendingTokens.push(t) },
        putBlock: (tokenId, _n, envelope) => {
          const b = decodeBlockEnvelope(envelope)
          blocks.push({ record: blockRecord(tokenId, b), envelope })
        },
        putTransaction: (t) => {
          const now = Date.now()
          transactions.push({
            txId: t.txid, kind: kindOfTx(t.role), transactionType: TransactionType.TRANSFERRED, initiator: t.sender, receiver: t.receiver,
            tokens: t.tokens, amount: t.amountMilli, comment: t.memo, status: t.status, blockIds: t.blockId !== undefined ? [t.blockId] : [],
            epoch: t.epoch, createdAt: now, updatedAt: now, extra: { quorums: t.quorums, role: t.role, tokenType: t.tokenType }
          })
          participants.push({ txId: t.txid, did: t.sender, role: 'sender', epoch: t.epoch }, { txId: t.txid, did: t.receiver, role: 'receiver', epoch: t.epoch })
          if (t.role === 'quorum') for (const q of t.quorums) participants.push({ txId: t.txid, did: q, role: 'quorum', epoch: t.epoch })
        },
        putRecord: (c, key, value) => {
          if (c === 'cs-contents') contents[key] = value as string
          else extra.push({ type: 'put', collection: c, key, value })
        },
        delRecord: (c, key) => { if (c !== 'cs-contents') extra.push({ type: 'del', collection: c, key }) }
      }
      build(w)
      // the records the tokens had, read together (one read each was a promise each)
      const ids = [...new Set(pendingTokens.map((t) => t.tokenId))]
      const olds = ids.length === 0 ? [] : await repos.tokens.getMany(ids)
      const existing = new Map(ids.map((id, i) => [id, olds[i]]))
      for (const t of pendingTokens) {
        const old = existing.get(t.tokenId)
        const num = Number(t.latestBlockId.split('-')[0])
        tokens.set(t.tokenId, {
          tokenId: t.tokenId, kind: kindOf(t.tokenType), tokenType: t.tokenType, value: t.valueMilli, owner: t.owner, status: t.status,
          parent: t.parentId, latestBlockId: t.latestBlockId, latestBlockNumber: num, txId: t.txid ?? old?.txId,
          createdAt: old?.createdAt ?? t.updatedAt, updatedAt: t.updatedAt,
          ...((t.ftName ?? old?.ftName) !== undefined ? { ftName: t.ftName ?? old?.ftName, creator: t.creator ?? old?.creator } : {})
        })
        if (t.content !== undefined) contents[t.tokenId] = t.content
      }
      // A token's content never changes (its id is the content's CID): what is stored already is
      // not written again. Locking, sending and taking back 300 parts wrote their 200 KB of
      // contents three times.
      const withContent = Object.keys(contents)
      if (withContent.length > 0) {
        const stored = await repos.tokens.contents(withContent)
        withContent.forEach((id, i) => { if (stored[i] === contents[id]) delete contents[id] })
      }
      await ledger.commit({
        tokens: [...tokens.values()].map((record) => ({ record })),
        blocks, transactions, contents, extra,
        txParticipants: participants
      })
    }
  }
}
