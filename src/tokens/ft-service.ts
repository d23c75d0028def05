/**
 * The FT service: minting FTs backed by the creator's RBT (one atomic ledger commit), and the FT
 * listing. Transfers of FTs go through consensus (consensus/sender.ts). docs/protocol.md, "FTs".
 */
import { decodeBlockEnvelope, formatBlockId, setSignature, encodeBlockEnvelope, type Block } from '../tokenchain/block.js'
import { ftGenesisComment } from '../tokenchain/block.js'
import { sha3Hex } from '../tokenchain/hash.js'
import { TokenType, TransactionType } from '../tokenchain/types.js'
import type { Collection, KvStore } from '../storage/kv-store.js'
import type { StoredBlockInput, TokenLedger, TokenPrecondition } from '../storage/token-ledger.js'
import type { TokenRepositories } from '../storage/token-repositories.js'
import { Collections, TokenStatus, type BalanceRecord, type TokenRecord, type TransactionRecord } from '../storage/token-records.js'
import { ErrorCode, RbtError } from '../util/errors.js'
import { checkFtMint, planFtMint, type FtMintRequest } from './ft.js'
import { selectTokens } from './select.js'
import { blockRecordOf, goTimeString, type TokenService, type TokenSigner } from './token-service.js'

/** Collection of the FT kinds minted on this node, key `<creator>/<name>`. */
export const FT_INFO_COLLECTION = 'ft-info'

export interface FtInfoRecord {
  name: string
  creator: string
  count: number
  valueMilli: number
  startIndex: number
  txId: string
  /** backing RBT tokens, burnt for the FTs */
  backing: string[]
  createdAt: number
}

export interface FtMintResult {
  did: string
  tx_id: string
  ft_name: string
  ft_count: number
  ft_value: number
  ft_num_start_index: number
  backing_tokens: string[]
  /** a few of the FT ids (the first and the last) */
  first_ft_id: string
  last_ft_id: string
}

export interface FtListItem {
  ft_name: string
  creator_did: string
  /** total supply when the FTs were minted on this node, else null */
  ft_count: number | null
  ft_value: number
  holders: Array<{ did: string, count: number }>
}

export interface FtServiceOptions {
  store: KvStore
  ledger: TokenLedger
  repos: TokenRepositories
  tokens: TokenService
  now?: () => number
}

const infoKey = (creator: string, name: string): string => `${creator}/${name}`

export class FtService {
  private readonly now: () => number
  private readonly busy = new Set<string>()

  constructor (private readonly opts: FtServiceOptions) {
    this.now = opts.now ?? Date.now
  }

  private infoCol (): Collection<FtInfoRecord> { return this.opts.store.collection<FtInfoRecord>(FT_INFO_COLLECTION) }

  /** Every check that needs no signature: the request, a new name, enough Free RBT. */
  async precheck (req: FtMintRequest): Promise<number> {
    const value = checkFtMint(req)
    if (await this.infoCol().get(infoKey(req.did, req.ftName)) !== undefined) throw new RbtError(ErrorCode.CONFLICT, `FT name "${req.ftName}" is already used by ${req.did}; choose another name`)
    const bal = await this.opts.repos.balances.get(req.did)
    const free = bal?.sums.rbt?.Free ?? 0
    if (free < req.tokenCount * 1000) throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `insufficient balance: ${free / 1000} Free RBT, ${req.tokenCount} RBT needed to back the FTs`)
    return value
  }

  /**
   * Mints the FTs: the backing RBT (split first when no exact set exists) get one "13" block signed
   * by the creator, each group of FTs one signed genesis, and every record (backing tokens
   * BurntForFT, FT tokens Free, blocks, the transaction, the FT info) lands in one commit that
   * requires the backing tokens to be still Free at the blocks the burn continues.
   */
  async mint (req: FtMintRequest, signer: TokenSigner): Promise<FtMintResult> {
    if (signer.did !== req.did) throw new RbtError(ErrorCode.INTERNAL, 'signer does not match the creator')
    const key = infoKey(req.did, req.ftName)
    if (this.busy.has(key)) throw new RbtError(ErrorCode.CONFLICT, `FT "${req.ftName}" of ${req.did} is being minted already`)
    this.busy.add(key)
    try {
      return await this.mintUnguarded(req, signer)
    } finally { this.busy.delete(key) }
  }

  private async mintUnguarded (req: FtMintRequest, signer: TokenSigner): Promise<FtMintResult> {
    const valueMilli = await this.precheck(req)
    const { repos, ledger } = this.opts
    const need = req.tokenCount * 1000
    const free = await repos.owners.list(req.did, 'rbt', TokenStatus.Free)
    const sel = selectTokens(free.map((e) => ({ tokenId: e.tokenId, value: e.value })), need)
    const backingIds = sel.take.map((h) => h.tokenId)
    if (sel.split !== undefined) {
      const r = await this.opts.tokens.splitToken(sel.split.token.tokenId, sel.split.need, signer)
      backingIds.push(r.parts[0]!.token_id)
    }
    const records = await repos.tokens.getMany(backingIds)
    const backing: Array<{ tokenId: string, valueMilli: number, latest: Block, record: TokenRecord }> = []
    for (const [i, rec] of records.entries()) {
      if (rec === undefined || rec.status !== TokenStatus.Free || rec.owner !== req.did) throw new RbtError(ErrorCode.CONFLICT, `token ${backingIds[i]!} changed while the FTs were prepared; retry`)
      const latest = await repos.blocks.latest(rec.tokenId)
      if (latest === undefined) throw new RbtError(ErrorCode.STORAGE, `token ${rec.tokenId} has no stored chain`)
      const [env] = await repos.blocks.envelopes([latest])
      backing.push({ tokenId: rec.tokenId, valueMilli: rec.value, latest: decodeBlockEnvelope(env!), record: rec })
    }
    const now = this.now()
    const ts = goTimeString(now)
    const plan = planFtMint({
      creator: req.did, name: req.ftName, startIndex: req.startIndex, count: req.ftCount, valueMilli,
      backing, genesisComment: ftGenesisComment(ts, req.ftName)
    })
    const burn = setSignature(plan.burn, req.did, await signer.sign(plan.burn.hash))
    const burnEnv = encodeBlockEnvelope(burn)
    const txId = sha3Hex(`ft-mint:${req.did}:${req.ftName}:${burn.hash}`)
    const blocks: StoredBlockInput[] = []
    const tokens: Array<{ record: TokenRecord, expect: TokenPrecondition }> = []
    for (const b of backing) {
      const rec = blockRecordOf(b.tokenId, burn, now)
      blocks.push({ record: rec, envelope: burnEnv })
      tokens.push({
        record: { ...b.record, status: TokenStatus.BurntForFT, latestBlockId: rec.blockId, latestBlockNumber: rec.number, txId, updatedAt: now },
        expect: { status: [TokenStatus.Free], owner: req.did, latestBlockId: b.record.latestBlockId }
      })
    }
    for (const g of plan.groups) {
      const signed = setSignature(g.block, req.did, await signer.sign(g.block.hash))
      const env = encodeBlockEnvelope(signed)
      const blockId = formatBlockId(0, signed.hash)
      for (const id of g.ids) {
        blocks.push({ record: blockRecordOf(id, signed, now), envelope: env })
        tokens.push({
          record: {
            tokenId: id, kind: 'ft', tokenType: TokenType.FT, value: valueMilli, owner: req.did, status: TokenStatus.Free,
            latestBlockId: blockId, latestBlockNumber: 0, txId, ftName: req.ftName, creator: req.did, createdAt: now, updatedAt: now
          },
          expect: { exists: false }
        })
      }
    }
    const tx: TransactionRecord = {
      txId, kind: 'mint', transactionType: TransactionType.GENERATED, initiator: req.did, tokens: [...backing.map((b) => b.tokenId), ...plan.ids],
      amount: need, comment: `FT ${req.ftName}: ${req.ftCount} from ${req.startIndex}`, status: 'committed',
      blockIds: [formatBlockId(burn.content.transInfo.tokens[backing[0]!.tokenId]!.blockNumber, burn.hash)],
      epoch: Math.floor(now / 1000), createdAt: now, updatedAt: now,
      extra: { tokenType: 'ft', ftName: req.ftName, ftCount: req.ftCount, startIndex: req.startIndex }
    }
    const info: FtInfoRecord = {
      name: req.ftName, creator: req.did, count: req.ftCount, valueMilli, startIndex: req.startIndex, txId, backing: backing.map((b) => b.tokenId), createdAt: now
    }
    await ledger.exclusive(async () => {
      if (await this.infoCol().get(infoKey(req.did, req.ftName)) !== undefined) throw new RbtError(ErrorCode.CONFLICT, `FT name "${req.ftName}" is already used by ${req.did}; choose another name`)
      await ledger.commitUnlocked({ tokens, blocks, transactions: [tx], extra: [{ type: 'put', collection: FT_INFO_COLLECTION, key: infoKey(req.did, req.ftName), value: info }] })
    })
    return {
      did: req.did, tx_id: txId, ft_name: req.ftName, ft_count: req.ftCount, ft_value: valueMilli / 1000, ft_num_start_index: req.startIndex,
      backing_tokens: info.backing, first_ft_id: plan.ids[0]!, last_ft_id: plan.ids[plan.ids.length - 1]!
    }
  }

  /** FT kinds minted here or held by a DID of this node, with the holdings of each DID. */
  async list (): Promise<FtListItem[]> {
    const out = new Map<string, FtListItem>()
    for await (const [, v] of this.infoCol().entries()) {
      const r = v
      out.set(infoKey(r.creator, r.name), { ft_name: r.name, creator_did: r.creator, ft_count: r.count, ft_value: r.valueMilli / 1000, holders: [] })
    }
    for await (const [did, b] of this.opts.store.collection<BalanceRecord>(Collections.balances).entries()) {
      for (const g of Object.values(b.ftGroups ?? {})) {
        if (g.count <= 0) continue
        const k = infoKey(g.creator, g.name)
        let item = out.get(k)
        if (item === undefined) { item = { ft_name: g.name, creator_did: g.creator, ft_count: null, ft_value: g.value / g.count / 1000, holders: [] }; out.set(k, item) }
        item.holders.push({ did, count: g.count })
      }
    }
    return [...out.values()]
  }
}
