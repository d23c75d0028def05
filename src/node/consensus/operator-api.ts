/**
 * The operator features of the reference's CLI (docs/api.md, "Operator features"), each a thin
 * binding of services that already exist: the release of Locked tokens over the sender's abort
 * path and the quorum's pledge records.
 */
import { DISTRUSTED, type DistrustRecord } from '../../consensus/certificate-evidence.js'
import type { BadBlock, ChainValidationItem, LockedTokenItem, PledgedTokenItem, ReleaseLockedResult, RunUnpledgeResult, SelfTransferResult, TxCountItem, ValidateChainResult } from '../../api/contract/operator-results.js'
import { ok, type Envelope, type PendingSignature } from '../../api/contract/envelope.js'
import type { SignPrompt } from '../../wallet/did-crypto.js'
import type { PledgeRecord } from '../../consensus/records.js'
import { buildBundle, validateNewestBlocks } from '../../consensus/bundle.js'
import type { Ledger, SpentMarker } from '../../consensus/ports.js'
import type { ClaimRecord } from '../../consensus/claims.js'
import { claimantTx } from '../../consensus/claims.js'
import { formatBlockId, peekBlockEnvelope } from '../../tokenchain/block.js'
import { tokenStateHash } from '../../tokenchain/token-id.js'
import { releaseLockedTokens, DEFAULT_RELEASE_MIN_AGE_MS, type LockedTokenOutcome } from '../../consensus/release-locked.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { TokenRepositories } from '../../storage/token-repositories.js'
import type { TokenFamily } from '../../storage/token-records.js'
import type { ConsensusService } from './consensus-service.js'
import type { OperatorApi } from '../../api/server/services.js'
import { arbitersResult, registerSeat, type ArbiterSeatDeps } from './arbiter-seats.js'
export type { OperatorApi } from '../../api/server/services.js'

export interface OperatorApiDeps {
  consensus: () => ConsensusService
  repos: TokenRepositories
  localDids: () => Promise<string[]>
  /** the consensus view of the token store (chains, contents), as quorums read it */
  ledger: () => Ledger
  /** the node's signature verifier (DID documents through identity) */
  verifier: SignatureVerifier
  /** a DID hosted here (its type picks the two-step mode), or undefined */
  didRecord: (did: string) => Promise<{ type: number } | undefined>
  twoStep: { start: <T>(did: string, mode: number, op: (prompt: SignPrompt) => Promise<Envelope<T>>, operation?: string) => Promise<Envelope<T | PendingSignature>> }
  /** the node's claim table and known spent markers (undefined until the network runs) */
  claims?: () => { records: (stateHashes: readonly string[]) => Promise<Array<ClaimRecord | undefined>>, markers: (stateHashes: readonly string[]) => Promise<Array<SpentMarker | undefined>> } | undefined
  /** the arbiter committee and what a seat needs */
  seats?: Omit<ArbiterSeatDeps, 'ledger'>
}

/** Tokens re-issued by one self transfer at most: every token's whole chain travels to the quorums. */
export const SELF_TRANSFER_MAX_TOKENS = 100
/** A token is re-issued once its state is this old: the reference's pledge period. */
export const SELF_TRANSFER_MIN_AGE_MS = 7 * 24 * 3600 * 1000

const FAMILIES: readonly TokenFamily[] = ['rbt', 'ft', 'nft', 'sc']

const item = (o: LockedTokenOutcome): LockedTokenItem => ({
  token: o.token, did: o.owner, value: o.value_milli / 1000, transaction_id: o.txid, record_state: o.record_state, reason: o.reason
})

export function createOperatorApi (d: OperatorApiDeps): OperatorApi {
  const seatDeps = (): ArbiterSeatDeps => {
    if (d.seats === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'this node keeps no arbiter committee')
    return { ...d.seats, ledger: d.ledger }
  }
  return {
    doubleSpends: async (opts) => (await d.consensus().doubleSpends.list({ ...(opts.token !== undefined ? { tokenId: opts.token } : {}), ...(opts.limit !== undefined ? { limit: opts.limit } : {}) })).map((p) => ({
      id: p.id, token: p.tokenId, state: p.state, state_hash: p.stateHash, evidence: p.kind, spent_by: [...p.spenders],
      ...(p.blocks !== undefined ? { blocks: [...p.blocks] } : {}), ...(p.markers !== undefined ? { markers: p.markers.map((m) => ({ ...m })) } : {}),
      ...(p.certificates !== undefined ? { certificates: p.certificates.map((c) => ({ txid: c.txid, arbiters: [...c.arbiters], grants: c.grants.map((g) => ({ ...g, states: [...g.states] })) })) } : {}),
      ...(p.grantedTwice !== undefined ? { granted_twice: [...p.grantedTwice] } : {}), ...(p.distrusted !== undefined ? { distrusted: [...p.distrusted] } : {}),
      seen_by: p.seenBy, seen_at: new Date(p.at).toISOString()
    })),
    arbiters: async () => arbitersResult(seatDeps()),
    arbiterRegister: async (did, leave = false) => await registerSeat(seatDeps(), did, leave),
    distrustedArbiters: async () => {
      const out: DistrustRecord[] = []
      for await (const [, r] of d.ledger().records<DistrustRecord>(DISTRUSTED)) out.push(r)
      return out.sort((a, b) => b.at - a.at).map((r) => ({
        peer: r.peer, state_hash: r.stateHash, transactions: [...r.txids], grants: r.grants.map((g) => ({ ...g, states: [...g.states] })), conflict: r.conflict, since: new Date(r.at).toISOString()
      }))
    },
    releaseLocked: async (opts = {}) => {
      const cs = d.consensus()
      // every Locked token of the node's DIDs, from the owner index (one prefix read per DID and family)
      const ids: string[] = []
      for (const did of await d.localDids()) {
        for (const f of FAMILIES) for (const e of await d.repos.owners.list(did, f, 'Locked')) ids.push(e.tokenId)
      }
      const recs = ids.length === 0 ? [] : await d.repos.tokens.getMany(ids)
      const locked = recs.flatMap((r) => r === undefined || r.status !== 'Locked'
        ? []
        : [{ tokenId: r.tokenId, owner: r.owner, valueMilli: r.value, ...(r.txId !== undefined ? { txid: r.txId } : {}) }])
      const out = await releaseLockedTokens({ sender: cs.sender, quorum: cs.quorum, locked, minAgeMs: opts.minAgeMs ?? DEFAULT_RELEASE_MIN_AGE_MS })
      return { released: out.released.map(item), kept: out.kept.map(item) }
    },
    validateChains: async (did, token, opts = {}) => {
      let ids: string[]
      if (token !== undefined && token !== '') {
        const rec = await d.repos.tokens.get(token)
        if (rec === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `Failed to get token chain block, token ${token} does not exist on this node`)
        ids = [token]
      } else {
        // every token of the DID that has a chain: an NFT or contract created but not deployed yet has none to validate
        const owned = [...new Set((await d.repos.owners.list(did)).map((e) => e.tokenId))]
        const recs = owned.length === 0 ? [] : await d.repos.tokens.getMany(owned)
        ids = owned.filter((_, i) => recs[i] === undefined || recs[i]!.latestBlockId !== '')
      }
      const ledger = d.ledger()
      const tokens: ChainValidationItem[] = []
      for (const id of ids) tokens.push(await validateOne(ledger, d, id, opts.blockCount ?? 0))
      const valid = tokens.filter((t) => t.valid).length
      return { did, checked: tokens.length, valid, invalid: tokens.length - valid, tokens }
    },
    tokenClaims: async (token, blockId) => {
      const c = d.claims?.()
      if (c === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'claims are served once the node\'s network runs')
      // the states asked: one block, or the genesis state and every block of the chain known here
      const blocks = blockId !== undefined ? [blockId] : ['', ...(await d.ledger().chain(token)).map((b, i) => formatBlockId(i, peekBlockEnvelope(b).hash))]
      const hashes = blocks.map((b) => tokenStateHash(token, b))
      const [records, markers] = await Promise.all([c.records(hashes), c.markers(hashes).catch(() => hashes.map(() => undefined))])
      return {
        token,
        states: blocks.map((b, i) => {
          const r = records[i]
          const m = markers[i]
          return {
            state: `${token}@${b}`,
            state_hash: hashes[i]!,
            claim: r === undefined
              ? null
              : {
                  transaction_id: r.txid,
                  status: r.committed === true ? 'committed' as const : 'open' as const,
                  granted_at: new Date(r.at).toISOString(),
                  last_asked_at: r.askedAt !== undefined ? new Date(r.askedAt).toISOString() : null,
                  asks: r.asks ?? 0,
                  claimants: r.claimants.map((x) => ({ peer: x.peer, quorum: x.quorum, transaction_id: claimantTx(r, x), nonce: x.nonce ?? null, signature: x.sig ?? null }))
                },
            marker: m === undefined ? null : { transaction_id: m.txid, block_id: m.blockId, quorum: m.quorum }
          }
        })
      }
    },
    pledgedTokens: async () => {
      const out: PledgedTokenItem[] = []
      for (const p of await pledges(d.ledger())) {
        for (const token of p.tokens) {
          out.push({ did: p.quorumDid, token, transaction_id: p.txid, token_state: p.newBlockIds, release_at: new Date(p.releaseAt).toISOString() })
        }
      }
      return out
    },
    txCounts: async () => {
      const out: TxCountItem[] = []
      for (const did of await d.localDids()) {
        // transactions between parties (as the reference's transaction history); mints, splits and ingests are not
        const txs = (await d.repos.transactions.byDid(did)).filter((t) => t.kind === 'transfer' || t.kind === 'receive')
        out.push({ DID: did, TxnSend: txs.filter((t) => t.initiator === did).length, TxnReceived: txs.filter((t) => t.receiver === did && t.initiator !== did).length })
      }
      return out
    },
    runUnpledge: async () => {
      const cs = d.consensus()
      const ledger = d.ledger()
      const before = await pledges(ledger)
      await cs.quorum.sweep()
      const after = new Set((await pledges(ledger)).map((p) => `${p.quorumDid}/${p.txid}`))
      const gone = before.filter((p) => !after.has(`${p.quorumDid}/${p.txid}`))
      const ids = gone.flatMap((p) => p.tokens)
      const states = await ledger.tokensById(ids)
      // released now: Free again at the quorum (a token that moved on since is not counted)
      const freed = states.filter((t, i) => t !== undefined && t.status === 'Free' && t.owner === gone.find((p) => p.tokens.includes(ids[i]!))?.quorumDid)
      const milli = freed.reduce((s, t) => s + t!.valueMilli, 0)
      return { released: milli / 1000, pledges_released: gone.length, tokens: freed.map((t) => t!.tokenId), pledges_held: after.size }
    },
    selfTransfer: async (did, opts = {}) => {
      const rec = await d.didRecord(did)
      if (rec === undefined) throw new RbtError(ErrorCode.FORBIDDEN, `DID does not have an access: ${did} is not hosted on this node`)
      const before = Date.now() - (opts.minAgeMs ?? SELF_TRANSFER_MIN_AGE_MS)
      const free = await d.repos.owners.list(did, 'rbt', 'Free')
      const recs = free.length === 0 ? [] : await d.repos.tokens.getMany(free.map((e) => e.tokenId))
      const due = recs.filter((r) => r !== undefined && r.status === 'Free' && r.owner === did && r.updatedAt <= before).map((r) => r!)
      if (due.length === 0) return ok<SelfTransferResult>('No tokens present for self transfer', null)
      const take = due.slice(0, SELF_TRANSFER_MAX_TOKENS)
      const amountMilli = take.reduce((sum, r) => sum + r.value, 0)
      const ids = take.map((r) => r.tokenId)
      return await d.twoStep.start(did, rec.type, async (prompt) => {
        const t0 = Date.now()
        const r = await d.consensus().selfTransfer(did, ids, amountMilli, prompt)
        return ok<SelfTransferResult>(`Transfer finished successfully in ${((Date.now() - t0) / 1000).toFixed(1)}s with trnxid ${r.txid}`,
          { transactionID: r.txid, tokens: ids, amount: amountMilli / 1000, remaining: due.length - take.length })
      }, 'self-transfer')
    }
  }
}

/**
 * The whole chain of one stored token, validated as a quorum validates a token it is asked to
 * accept (`validateBundleToken`: every block, every signature, part tokens' parents, FT backing).
 */
async function validateOne (ledger: Ledger, d: OperatorApiDeps, tokenId: string, blockCount: number): Promise<ChainValidationItem> {
  let length = 0
  try {
    const bundle = await buildBundle(ledger, [tokenId])
    length = bundle.chains[tokenId]?.length ?? 0
    const validated = await validateNewestBlocks(bundle, tokenId, d.verifier, blockCount)
    return { token: tokenId, valid: true, length, validated_blocks: validated, bad_block: null }
  } catch (e) {
    return { token: tokenId, valid: false, length, validated_blocks: blockCount > 0 && blockCount < length ? blockCount : length, bad_block: await badBlock(d, tokenId, e) }
  }
}

async function badBlock (d: OperatorApiDeps, tokenId: string, e: unknown): Promise<BadBlock> {
  const details = (e instanceof RbtError ? e.details : undefined) as { tokenId?: string, blockNumber?: number, check?: string } | undefined
  const token = details?.tokenId ?? tokenId
  // checks across chains (a part's parent, an FT's backing) name no block: the last block of the token's chain is where they fail
  const number = details?.blockNumber ?? Math.max(0, ((await d.repos.tokens.get(token).catch(() => undefined))?.latestBlockNumber ?? 0))
  const stored = await d.repos.blocks.get(token, number).catch(() => undefined)
  return {
    token,
    block_number: number,
    block_id: stored?.blockId ?? null,
    check: details?.check ?? (e instanceof RbtError && e.code === ErrorCode.NOT_FOUND ? 'missing' : 'ancestry'),
    reason: errorMessage(e)
  }
}

async function pledges (ledger: Ledger): Promise<PledgeRecord[]> {
  const out: PledgeRecord[] = []
  for await (const [, p] of ledger.records<PledgeRecord>('cs-pledges')) out.push(p)
  return out
}
