/**
 * A wallet shows what it can spend: when this node learns that a token it holds Free for a local
 * DID was spent by another transaction (a spent-state announcement, a quorum refusing a double
 * spend, a wallet sync that no longer lists it), it fetches that token's chain from a peer that
 * has it, validates it, and when the chain goes on past the state held here to another owner (or
 * a burn), stores those blocks and drops the token from the balance, with a WARN line naming the
 * transaction. A claim whose chain cannot be fetched or does not validate changes nothing.
 */
import { fetchBundle, validateBundleTokens, type ChainSource, type HeldChains } from '../../consensus/chain-sync.js'
import { decodeBlockEnvelope } from '../../tokenchain/block.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import type { LedgerChange, StoredBlockInput, TokenLedger } from '../../storage/token-ledger.js'
import type { TokenRepositories } from '../../storage/token-repositories.js'
import { TokenStatus, type TokenRecord, type TransactionRecord } from '../../storage/token-records.js'
import { blockRecordOf } from '../../tokens/token-service.js'
import { errorMessage } from '../../util/errors.js'
import { ingestedTransaction } from './ingested-transaction.js'
import type { Logger } from '../../util/logger.js'

export interface SpentCheckDeps {
  ledger: TokenLedger
  repos: TokenRepositories
  verifier: SignatureVerifier
  isLocalDid: (did: string) => Promise<boolean>
  log: Logger
  now?: () => number
}

/** A token state said to be spent: the token and, when known, the block it was spent from. */
export interface SpentClaim { tokenId: string, blockId?: string }

export interface DroppedToken { tokenId: string, owner: string, txid: string, newOwner: string }

/** Tokens held Free by a local DID that `claims` name (at the state held, when a block is named). */
export async function heldClaims (deps: Pick<SpentCheckDeps, 'repos' | 'isLocalDid'>, claims: readonly SpentClaim[]): Promise<TokenRecord[]> {
  const out: TokenRecord[] = []
  const seen = new Set<string>()
  for (const c of claims) {
    if (seen.has(c.tokenId)) continue
    seen.add(c.tokenId)
    const t = await deps.repos.tokens.get(c.tokenId)
    if (t === undefined || t.status !== TokenStatus.Free) continue
    if (c.blockId !== undefined && c.blockId !== '' && c.blockId !== t.latestBlockId) continue
    if (!await deps.isLocalDid(t.owner)) continue
    out.push(t)
  }
  return out
}

/**
 * Checks the chains of `held` at `sources` (tried in order until one serves a valid longer chain)
 * and drops each token whose validated chain shows it spent away from its holder. `why` names how
 * the node learned it (for the log). Returns the tokens dropped.
 */
export async function dropSpent (deps: SpentCheckDeps, held: readonly TokenRecord[], sources: ReadonlyArray<{ name: string, source: ChainSource }>, why: string): Promise<DroppedToken[]> {
  if (held.length === 0) return []
  const local: HeldChains = {
    chain: async (id) => await deps.repos.blocks.envelopes(await deps.repos.blocks.chain(id)),
    content: async (id) => await deps.repos.tokens.content(id)
  }
  let left = [...held]
  const dropped: DroppedToken[] = []
  for (const { name, source } of sources) {
    if (left.length === 0) break
    const ids = left.map((t) => t.tokenId)
    let fetched
    let tips
    try {
      fetched = await fetchBundle(source, local, ids)
      tips = await validateBundleTokens(fetched.bundle, ids, deps.verifier)
    } catch (e) {
      deps.log.debug(`checking ${ids.length} token(s) reported spent (${why}) at ${name}: ${errorMessage(e)}`)
      continue
    }
    const now = deps.now?.() ?? Date.now()
    const change: LedgerChange = { tokens: [], blocks: [] }
    const txs = new Map<string, TransactionRecord>()
    const found: DroppedToken[] = []
    for (const t of left) {
      const tip = tips.get(t.tokenId)
      if (tip === undefined || tip.blockId === t.latestBlockId) continue
      if (tip.owner === t.owner && !tip.burnt) continue
      const chain = fetched.bundle.chains[t.tokenId]!
      const last = decodeBlockEnvelope(chain[chain.length - 1]!)
      const txid = last.content.transInfo.tid ?? ''
      const blocks: StoredBlockInput[] = []
      for (let i = fetched.held[t.tokenId] ?? 0; i < chain.length; i++) blocks.push({ record: blockRecordOf(t.tokenId, decodeBlockEnvelope(chain[i]!), now), envelope: chain[i]! })
      change.blocks!.push(...blocks)
      change.tokens!.push({
        record: { ...t, owner: tip.burnt ? t.owner : tip.owner, status: tip.burnt ? TokenStatus.Burnt : TokenStatus.Transferred, latestBlockId: tip.blockId, latestBlockNumber: tip.blockNumber, ...(txid !== '' ? { txId: txid } : {}), updatedAt: now },
        expect: { latestBlockId: t.latestBlockId }
      })
      // the token record names the spending transaction: its record is kept too
      if (txid !== '') txs.set(txid, ingestedTransaction(txs.get(txid) ?? await deps.repos.transactions.get(txid), txid, last, tip, t.tokenId, t.value, now))
      found.push({ tokenId: t.tokenId, owner: t.owner, txid, newOwner: tip.burnt ? '(burnt)' : tip.owner })
    }
    change.transactions = [...txs.values()]
    if (found.length > 0) {
      try {
        await deps.ledger.commit(change)
      } catch (e) {
        deps.log.warn(`tokens reported spent (${why}) could not be dropped: ${errorMessage(e)}`)
        continue
      }
      for (const d of found) deps.log.warn(`token ${d.tokenId} of ${d.owner} was spent by transaction ${d.txid} (to ${d.newOwner}; learned from ${why}, chain checked at ${name}): dropped from the balance`)
      dropped.push(...found)
    }
    const gone = new Set(found.map((d) => d.tokenId))
    left = left.filter((t) => !gone.has(t.tokenId))
  }
  return dropped
}
