import { decodeBlockEnvelope, parseBlockId, peekBlockEnvelope } from '../tokenchain/block.js'
import { bytesToHex } from '../tokenchain/hash.js'
import { spendAnchor } from '../tokenchain/validate.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import { isFtGenesis } from './bundle.js'
import type { BurnClaim } from './ports.js'

/**
 * The burnt ancestors a transaction's tokens rest on, as states to claim (docs/protocol.md,
 * "Claims"). A part token (or an FT) is made by a burn its owner signs alone, with no quorum: two
 * copies of one wallet can burn the same token in two different ways and spend the parts through
 * two quorum sets, where no state of the two transactions is the same. So a token spent at its
 * genesis state claims, with its own state, the state its parent was burnt at (the parent's block
 * before the burn), spent by the burn block: every transaction that spends a part of the same burn
 * is granted it again, a transaction of another burn of the same state (or a transfer of it) is
 * refused. The walk goes up while an ancestor was burnt straight from its genesis (never spent by a
 * transaction, which would have claimed its own ancestors), as far as the chains at hand reach.
 */

/** Most levels of ancestry walked (a balanced tree of parts is far shallower). */
const MAX_LEVELS = 64

export type { BurnClaim } from './ports.js'

/** `spent`: each token and the state it spends, keyed on its last quorum-signed state (ChainTip.anchorBlockId). */
export async function burntAncestors (spent: ReadonlyArray<readonly [tokenId: string, blockId: string]>, chainOf: (tokenId: string) => Promise<readonly Uint8Array[] | undefined>): Promise<BurnClaim[]> {
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
    if (seen.has(id) || level >= MAX_LEVELS) continue
    seen.add(id)
    const chain = await chainOf(id).catch(() => undefined)
    if (chain === undefined || chain.length === 0) continue
    const genesis = decodeBlockEnvelope(chain[0]!)
    const parentId = genesis.content.genesis?.info[id]?.parentId ?? ''
    const parents = isFtGenesis(genesis, id) ? parentId.split(',').filter((p) => p !== '') : parentId !== '' && genesis.content.genesis?.type === '' ? [parentId] : []
    for (const p of parents) {
      const pc = await chainOf(p).catch(() => undefined)
      if (pc === undefined || pc.length < 2) continue
      const burn = peekBlockEnvelope(pc[pc.length - 1]!).hash
      // the state the burn spent: the parent's last quorum-signed state before it (owner-only
      // blocks in between change nothing: two burns of one state meet whatever their owner appended)
      let before: string
      try { before = spendAnchor(pc, pc.length - 2) } catch { continue }
      const stateHash = tokenStateHash(p, before)
      if (!out.has(stateHash)) out.set(stateHash, { stateHash, spender: burn, proof: pc.slice(parseBlockId(before).number).map(bytesToHex) })
      // burnt straight from its genesis state: its own burnt ancestors may never have been claimed
      if (parseBlockId(before).number === 0) queue.push([p, level + 1])
    }
  }
  return [...out.values()]
}
