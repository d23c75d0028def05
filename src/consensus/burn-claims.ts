import { decodeBlockEnvelope, parseBlockId, peekBlockEnvelope } from '../tokenchain/block.js'
import { bytesToHex } from '../tokenchain/hash.js'
import { spendAnchor } from '../tokenchain/validate.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import { AncestryMissing, isFtGenesis, validateBundleToken } from './bundle.js'
import type { BurnClaim, Ledger, Verifier } from './ports.js'
import type { VerifiedBlockCache } from '../tokenchain/validate.js'
import type { AncestryMemory } from './bundle.js'
import type { ChainBundle } from './messages.js'
import { ErrorCode, RbtError } from '../util/errors.js'

/**
 * The burnt ancestors a transaction's tokens rest on, as states to claim (docs/protocol.md,
 * "Claims"). A part token (or an FT) is made by a burn its owner signs alone, with no quorum: two
 * copies of one wallet can burn the same token in two different ways and spend the parts through
 * two quorum sets, where no state of the two transactions is the same. So a token spent at its
 * genesis state claims, with its own state, the state its parent was burnt at (the parent's block
 * before the burn), spent by the burn block: every transaction that spends a part of the same burn
 * is granted it again, a transaction of another burn of the same state (or a transfer of it) is
 * refused. The walk goes up while an ancestor was burnt straight from its genesis (never spent by a
 * transaction, which would have claimed its own ancestors), to the top of the line: a line longer
 * than any valid chain allows is refused (LineageTooDeep), never cut short.
 */

/**
 * The walk's bound: above the deepest lineage a valid chain can have. Every split leaves each part
 * worth at least 0.001 RBT less than its parent (validate.ts refuses a part worth nothing or as much
 * as its parent), and a whole token is 1 RBT, so a part rests on at most 999 burns. The walk never
 * stops short of the top: a lineage it cannot finish is refused, not cut (a part burnt one level
 * below the bound once escaped a walk of 64 levels, and the state burnt twice above it was paid twice).
 */
export const MAX_BURN_LEVELS = 1024

/**
 * Genesis burns in a row above a wallet's change part at which the sender resets the line with a
 * self transfer (each payment from the change burns it at its genesis, one level more; a transfer
 * claims and seals every level, so the line is kept short: docs/protocol.md, "Burnt ancestors").
 */
export const LINEAGE_RESET_LEVELS = 32

export type { BurnClaim } from './ports.js'

/**
 * `spent`: each token and the state it spends, keyed on its last quorum-signed state (ChainTip.anchorBlockId).
 * `strict` (a quorum's vote, a receiver's certificate): a parent whose chain is not at hand, or
 * does not read, throws AncestorUnknown instead of being left out; the sender's own walk is lenient.
 */
export async function burntAncestors (spent: ReadonlyArray<readonly [tokenId: string, blockId: string]>, chainOf: (tokenId: string) => Promise<readonly Uint8Array[] | undefined>, strict = false): Promise<BurnClaim[]> {
  const out = new Map<string, BurnClaim>()
  const seen = new Set<string>()
  const queue: Array<[string, number]> = []
  for (const [id, blockId] of spent) {
    let n: number
    try { n = parseBlockId(blockId).number } catch { continue }
    if (n === 0) queue.push([id, 0])
  }
  while (queue.length > 0) {
    const [id, level] = queue.shift()!
    if (seen.has(id)) continue
    if (level >= MAX_BURN_LEVELS) throw new LineageTooDeep(id)
    seen.add(id)
    const chain = await chainOf(id).catch(() => undefined)
    if (chain === undefined || chain.length === 0) {
      // a token spent at its genesis whose chain is not at hand: its parents cannot be named
      if (strict) throw new AncestorUnknown(id)
      continue
    }
    const genesis = decodeBlockEnvelope(chain[0]!)
    const parentId = genesis.content.genesis?.info[id]?.parentId ?? ''
    const parents = isFtGenesis(genesis, id) ? parentId.split(',').filter((p) => p !== '') : parentId !== '' && genesis.content.genesis?.type === '' ? [parentId] : []
    for (const p of parents) {
      const pc = await chainOf(p).catch(() => undefined)
      if (pc === undefined || pc.length < 2) {
        if (strict) throw new AncestorUnknown(p)
        continue
      }
      // the state the burn spent: the parent's last quorum-signed state before it (owner-only
      // blocks in between change nothing: two burns of one state meet whatever their owner appended)
      let burn: string
      let before: string
      try {
        burn = peekBlockEnvelope(pc[pc.length - 1]!).hash
        before = spendAnchor(pc, pc.length - 2)
      } catch {
        if (strict) throw new AncestorUnknown(p)
        continue
      }
      const stateHash = tokenStateHash(p, before)
      if (!out.has(stateHash)) out.set(stateHash, { stateHash, spender: burn, proof: pc.slice(parseBlockId(before).number).map(bytesToHex) })
      // burnt straight from its genesis state: its own burnt ancestors may never have been claimed
      if (parseBlockId(before).number === 0) queue.push([p, level + 1])
    }
  }
  return [...out.values()]
}

/** A line of genesis burns longer than any valid chain has: the walk would have to stop short of its top. */
export class LineageTooDeep extends RbtError {
  constructor (readonly tokenId: string) {
    super(ErrorCode.CHAIN_INVALID, `the burnt ancestors of token ${tokenId} go more than ${MAX_BURN_LEVELS} genesis burns deep, more than a valid chain can: refused`)
  }
}

/** How many burnt ancestors' states a spend of a token at its genesis claims and seals (0 for a token transferred since, or whole). */
export async function claimedAncestors (tokenId: string, genesisBlockId: string, chainOf: (tokenId: string) => Promise<readonly Uint8Array[] | undefined>): Promise<number> {
  return (await burntAncestors([[tokenId, genesisBlockId]], chainOf)).length
}

/** A burnt ancestor whose chain a validator has not validated: its burn cannot be claimed or checked. */
export class AncestorUnknown extends RbtError {
  constructor (readonly tokenId: string) {
    super(ErrorCode.CHAIN_INVALID, `the chain of burnt ancestor ${tokenId} was not validated here: its burn cannot be checked`)
  }
}

/**
 * The chains a validator (a quorum voting, a receiver checking a certificate) reads burnt ancestors
 * from: only chains it validated. A spent token's own chain is the bundle's (validated with the
 * token) or its stored one; an ancestor's is one validated by this call (`memory.learned`,
 * `memory.checked`), or the stored chain of an ancestor remembered here, ending with the burn it
 * was remembered with. Never a bundle chain that validation skipped because the ancestor (or the
 * token's state) was known here: the sender may put anything there, an empty chain that hid the
 * burnt ancestor from the walk, or another burn of the same state.
 */
export function validatedChainOf (bundle: ChainBundle, memory: AncestryMemory, ledger: Pick<Ledger, 'chain'>, spent: ReadonlySet<string>): (tokenId: string) => Promise<readonly Uint8Array[] | undefined> {
  return async (id) => {
    if (spent.has(id)) return bundle.chains[id] ?? await ledger.chain(id)
    const now = memory.learned.get(id)?.chain ?? memory.checked?.get(id)
    if (now !== undefined) return now
    const rec = await memory.recall(id)
    if (rec === undefined) return undefined
    const stored = await ledger.chain(id)
    if (stored.length === 0) return undefined
    try { return peekBlockEnvelope(stored[stored.length - 1]!).hash === rec.burnHash ? stored : undefined } catch { return undefined }
  }
}

/**
 * A validator's burnt ancestors of the states a transaction spends (strict: every parent from a
 * chain validated here, see validatedChainOf). A token whose state was known here was not
 * validated down its ancestry by this call: when an ancestor is not at hand, the tokens spent at
 * their genesis are validated whole from the bundle (ancestors remembered here still count), and
 * the walk runs again. Throws AncestorUnknown (or AncestryMissing: the bundle lacks a chain) when
 * the ancestors still cannot be read from validated chains.
 */
export async function validatorBurns (spent: ReadonlyArray<readonly [tokenId: string, blockId: string]>, bundle: ChainBundle, memory: AncestryMemory, ledger: Pick<Ledger, 'chain'>, verifier: Verifier, cache?: VerifiedBlockCache): Promise<BurnClaim[]> {
  const chainOf = validatedChainOf(bundle, memory, ledger, new Set(spent.map(([id]) => id)))
  try {
    return await burntAncestors(spent, chainOf, true)
  } catch (e) {
    if (!(e instanceof AncestorUnknown)) throw e
  }
  for (const [id, blockId] of spent) {
    let n: number
    try { n = parseBlockId(blockId).number } catch { continue }
    if (n !== 0) continue
    // the sender left the chain out (the state was known here): it is asked for
    if (bundle.chains[id] === undefined) throw new AncestryMissing([id], id, `token ${id}: its chain is needed to name the burnt ancestors it rests on`)
    await validateBundleToken(bundle, id, verifier, cache, { ...memory, validated: undefined })
  }
  return await burntAncestors(spent, chainOf, true)
}
