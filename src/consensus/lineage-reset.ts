import { decodeBlockEnvelope, parseBlockId } from '../tokenchain/block.js'
import { claimedAncestors, LINEAGE_RESET_LEVELS } from './burn-claims.js'
import type { Ledger } from './ports.js'

/**
 * The change a payment left whose line of genesis burns is due for a reset (docs/protocol.md,
 * "Burnt ancestors"). Paying from a part burns it at its genesis into the payment and the change,
 * so a wallet that pays again and again from its change makes a line one burn longer each time,
 * and every spend claims and seals each burnt state of the line. A self transfer of the change
 * (quorum-signed) ends the line: a later spend walks up to that transfer only.
 *
 * `tokens` are the sender's Free parts at their genesis that were split off beside the tokens of
 * the transaction and rest on at least LINEAGE_RESET_LEVELS burnt ancestors; `amountMilli` their sum.
 */
export async function deepChange (ledger: Pick<Ledger, 'tokensById' | 'chain'>, sender: string, spentTokens: readonly string[], levels = LINEAGE_RESET_LEVELS): Promise<{ tokens: string[], amountMilli: number }> {
  const spent = (await ledger.tokensById(spentTokens, { content: false })).filter((t) => t !== undefined)
  const parents = [...new Set(spent.flatMap((t) => t.parentId !== undefined && t.parentId !== '' ? [t.parentId] : []))]
  const siblings = new Set<string>()
  for (const p of parents) {
    const chain = await ledger.chain(p)
    if (chain.length === 0) continue
    let children: string[]
    try { children = decodeBlockEnvelope(chain[chain.length - 1]!).content.childTokens } catch { continue }
    for (const c of children) if (!spentTokens.includes(c)) siblings.add(c)
  }
  const tokens: string[] = []
  let amountMilli = 0
  const held = await ledger.tokensById([...siblings], { content: false })
  for (const t of held) {
    if (t === undefined || t.owner !== sender || t.status !== 'Free') continue
    let atGenesis: boolean
    try { atGenesis = parseBlockId(t.latestBlockId).number === 0 } catch { continue }
    if (!atGenesis) continue
    const n = await claimedAncestors(t.tokenId, t.latestBlockId, async (id) => await ledger.chain(id)).catch(() => 0)
    if (n < levels) continue
    tokens.push(t.tokenId)
    amountMilli += t.valueMilli
  }
  return { tokens, amountMilli }
}
