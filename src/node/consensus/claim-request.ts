import type { ClaimantProof } from '../../consensus/claim-proofs.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { RequestCoalescer } from '../../util/request-coalescer.js'
import type { RpcClient } from '../../p2p/rpc.js'
import type { QueryPeer } from '../../p2p/closest-query.js'
import { withAddresses } from './spent-markers.js'
import { budgetDeadline, CLAIM_BATCH_MAX, PROOFS_MAX, withinBudget, type ClaimItem, type StateClaimMethods, type WireProof } from './claim-rpc.js'

/**
 * The asking side of claims (docs/protocol.md, "Claims"): a claim's items as they go to one
 * arbiter in `claims.claim` requests. The contract travels once per claim and arbiter (again if
 * the arbiter forgot it), the blocks showing the states' owners once per request, the claimants'
 * proofs once each; a request stays within the proofs and the block bytes an arbiter takes, and
 * the items of one turn for one peer go together (RequestCoalescer). What comes back: each item's
 * answer, with the arbiter's signed grants for each claimant attached.
 */

/** Most bytes of distinct blocks one `claims.claim` carries (showing the states' owners); more go in several requests. */
const CLAIM_BLOCKS_MAX_BYTES = 512 * 1024
/** More time per state of a claim, for the walk and for each request (ms). */
export const PER_ITEM_MS = 5
/** What an arbiter answers for a claim whose proof it no longer knows (the checker sends the contract again: the rpc carries code and message only). */
export const PROOF_UNKNOWN = 'its proof is not known here, send the contract'

/** The bytes of the distinct blocks some items show. */
const ownerBlockBytes = (items: ReadonlyArray<{ via?: string, path?: readonly Uint8Array[] }>): number => {
  const seen = new Set<Uint8Array>()
  let n = 0
  for (const it of items) for (const b of it.via === undefined ? it.path ?? [] : []) if (!seen.has(b)) { seen.add(b); n += b.length }
  return n
}

/** One claim as it travels: the transaction, its contract, and its claimants (each quorum's signed proof, and the peer answering for it). */
export interface Claim { forTx: string, contract: Uint8Array, claimants: ReadonlyArray<ClaimantProof> }
/** One state of a claim asked of an arbiter (a burnt ancestor: `via` the transaction, `burn` its proof; a state behind owner-only blocks: `path`). */
export interface ClaimRequestItem { txid: string, stateHash: string, via?: string, burn?: string[], path?: readonly Uint8Array[], claim: Claim }
/** An arbiter's answer for one item, with its signed grants of the item for each claimant. */
export interface ClaimRequestAnswer { granted: boolean, holder?: string, spent?: boolean, closer: QueryPeer[], grants?: Array<{ quorum: string, nonce: string, sig: string, states: string[] }> }

/** The claim requests of one node: items coalesced per peer and turn. */
export function claimRequests (opts: { rpc: () => RpcClient<StateClaimMethods>, timeoutMs: number }): RequestCoalescer<ClaimRequestItem, ClaimRequestAnswer> {
  const { timeoutMs } = opts
  type Item = ClaimRequestItem
  type Answer = ClaimRequestAnswer
  // per claim, the arbiters that checked its proofs (the contract goes once to each, in its first request)
  const delivered = new WeakMap<Claim, Map<string, Promise<boolean>>>()
  const send = async (peer: string, items: Item[], full = false): Promise<Answer[]> => {
    // items of several claims asked in one turn (transfers of this node claiming at once) go in as
    // many requests as keep each within the proofs an arbiter takes, answered in the items' order
    const claimsIn = [...new Set(items.map((it) => it.claim))]
    if (claimsIn.length > 1 && claimsIn.reduce((n, c) => n + c.claimants.length, 0) > PROOFS_MAX) {
      const parts: Item[][] = []
      let part: Item[] = []
      let proofs = 0
      for (const c of claimsIn) {
        if (part.length > 0 && proofs + c.claimants.length > PROOFS_MAX) { parts.push(part); part = []; proofs = 0 }
        part.push(...items.filter((it) => it.claim === c))
        proofs += c.claimants.length
      }
      if (part.length > 0) parts.push(part)
      const answered = new Map<Item, Answer>()
      await Promise.all(parts.map(async (p) => { (await send(peer, p, full)).forEach((a, i) => answered.set(p[i]!, a)) }))
      return items.map((it) => answered.get(it)!)
    }
    // the blocks showing the states' owners travel once per request; a request whose distinct
    // blocks would pass the bound goes as two (an arbiter's frame holds 1 MiB)
    if (items.length > 1 && ownerBlockBytes(items) > CLAIM_BLOCKS_MAX_BYTES) {
      const half = Math.ceil(items.length / 2)
      const [a, b] = await Promise.all([send(peer, items.slice(0, half), full), send(peer, items.slice(half), full)])
      return [...a, ...b]
    }
    // the claimants of every claim in the request, each once; the contract once per claim
    const proofs: WireProof[] = []
    const first = new Map<Claim, number>()
    const introduced: Array<[Claim, (ok: boolean) => void]> = []
    for (const it of items) {
      if (first.has(it.claim)) continue
      let byPeer = delivered.get(it.claim)
      if (byPeer === undefined) { byPeer = new Map(); delivered.set(it.claim, byPeer) }
      const known = byPeer.get(peer)
      let withContract = full || known === undefined || !await known
      if (known === undefined && !full) {
        let settle!: (ok: boolean) => void
        byPeer.set(peer, new Promise<boolean>((resolve) => { settle = resolve }))
        introduced.push([it.claim, settle])
        withContract = true
      }
      const at = proofs.length
      first.set(it.claim, at)
      it.claim.claimants.forEach((c, i) => {
        proofs.push({ quorum: c.quorum, nonce: c.nonce, sig: c.sig, ...(c.peer !== undefined ? { peer: c.peer } : {}), ...(withContract ? (i === 0 ? { contract: it.claim.contract } : { cp: at }) : {}) })
      })
    }
    const blocks: Uint8Array[] = []
    const blockAt = new Map<Uint8Array, number>()
    const blockIndex = (b: Uint8Array): number => {
      let i = blockAt.get(b)
      if (i === undefined) { i = blocks.length; blocks.push(b); blockAt.set(b, i) }
      return i
    }
    const wire: ClaimItem[] = items.map((it) => {
      const at = first.get(it.claim)!
      return {
        txid: it.txid,
        stateHash: it.stateHash,
        ...(it.via !== undefined ? { via: it.via } : {}),
        ...(it.via !== undefined && it.burn !== undefined ? { burn: it.burn } : {}),
        ...(it.via === undefined && it.path !== undefined ? { pb: it.path.map(blockIndex) } : {}),
        ps: it.claim.claimants.map((_, i) => at + i)
      }
    })
    let res: StateClaimMethods['claims.claim']['response']
    try {
      // an arbiter checks and writes every item: a full request gets more time than one state
      // (a claim of more states than an arbiter's burst is paced to its budget, not refused)
      res = await withinBudget(async () => await opts.rpc().call(peer, 'claims.claim', { items: wire, proofs, ...(blocks.length > 0 ? { blocks } : {}) }, { timeoutMs: timeoutMs + wire.length * PER_ITEM_MS }), wire.length, budgetDeadline(wire.length, timeoutMs))
      for (const [, settle] of introduced) settle(true)
    } catch (e) {
      for (const [c, settle] of introduced) { settle(false); delivered.get(c)?.delete(peer) }
      // the arbiter forgot the claim's proof (restarted): once more, with the contract
      if (!full && e instanceof RbtError && e.code === ErrorCode.UNAUTHORIZED && e.message.includes(PROOF_UNKNOWN)) return await send(peer, items, true)
      throw e
    }
    const answers: Answer[] = withAddresses(res)
    // the arbiter's signatures (its peer key), each over the items it lists for one claimant
    // (each item of each claimant covered once: an arbiter's flood of grants does not travel on to the signers)
    if (Array.isArray(res.pgrants)) {
      const covered = new Set<string>()
      for (const g of res.pgrants) {
        if (!Array.isArray(g?.items) || typeof g.sig !== 'string' || !/^(?:[0-9a-f]{2}){1,128}$/.test(g.sig) || !Number.isInteger(g.p) || proofs[g.p]?.quorum === undefined) continue
        const idx = [...new Set(g.items.filter((i): i is number => Number.isInteger(i) && i >= 0 && i < items.length && !covered.has(`${g.p}|${i}`)))]
        if (idx.length === 0) continue
        for (const i of idx) covered.add(`${g.p}|${i}`)
        const states = idx.map((i) => items[i]!.stateHash)
        for (const i of idx) {
          const a = answers[i]
          if (a !== undefined) (a.grants ??= []).push({ quorum: proofs[g.p]!.quorum!, nonce: proofs[g.p]!.nonce, sig: g.sig, states })
        }
      }
    }
    return answers
  }
  return new RequestCoalescer<Item, Answer>({ send: async (peer, items) => await send(peer, items), sendOne: async (peer, item) => (await send(peer, [item]))[0]!, maxBatch: CLAIM_BATCH_MAX })
}
