/**
 * Fungible tokens (docs/protocol.md, "FTs"): the mint rule, FT ids, the blocks a mint writes and
 * the backing relation between FTs and the RBT committed to them. Pure functions, no storage.
 *
 * Backing rule: `token_count` whole RBT back `ft_count` FTs of equal value
 * `token_count × 1000 / ft_count` milli-RBT, which must be a whole number of milli-RBT (≥ 0.001).
 * The backing tokens, ordered by token id, are laid end to end; FT number `start + j` covers the
 * value slice [j·v, (j+1)·v) and names as parents exactly the backing tokens that slice overlaps.
 */
import {
  createBlock, genesisEntry, nextTokenEntry, type Block, type BlockContent, type GenesisTokenInfo, type TransTokenEntry
} from '../tokenchain/block.js'
import { ftTokenId } from '../tokenchain/token-id.js'
import { TokenType, TransactionType, isDid } from '../tokenchain/types.js'
import { ErrorCode, RbtError } from '../util/errors.js'

/** FTs per genesis block: one creator signature covers this many FTs. */
export const FT_GENESIS_GROUP = 100
/** Largest supply one mint may create. */
export const MAX_FT_COUNT = 1_000_000

const NAME_RE = /^[A-Za-z0-9_.-](?:[A-Za-z0-9 _.-]{0,62}[A-Za-z0-9_.-])?$/

export interface FtMintRequest {
  did: string
  ftName: string
  ftCount: number
  /** whole RBT committed to the FTs */
  tokenCount: number
  startIndex: number
}

/** Checks a mint request and answers the value of one FT in milli-RBT. */
export function checkFtMint (r: FtMintRequest): number {
  if (!isDid(r.did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
  if (typeof r.ftName !== 'string' || !NAME_RE.test(r.ftName)) {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'ft_name must be 1 to 64 letters, digits, spaces, "_", "." or "-", not starting or ending with a space')
  }
  if (!Number.isSafeInteger(r.ftCount) || r.ftCount <= 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'ft_count must be a whole number greater than 0')
  if (r.ftCount > MAX_FT_COUNT) throw new RbtError(ErrorCode.INVALID_INPUT, `ft_count may be at most ${MAX_FT_COUNT}`)
  if (!Number.isSafeInteger(r.tokenCount) || r.tokenCount <= 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'token_count must be a whole number of RBT greater than 0')
  if (!Number.isSafeInteger(r.startIndex) || r.startIndex < 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'ft_num_start_index must be a whole number, 0 or greater')
  if (r.startIndex + r.ftCount > Number.MAX_SAFE_INTEGER) throw new RbtError(ErrorCode.INVALID_INPUT, 'ft_num_start_index is too large')
  const total = r.tokenCount * 1000
  if (r.ftCount > total) throw new RbtError(ErrorCode.INVALID_INPUT, `ft_count may be at most ${total} for ${r.tokenCount} RBT: one FT is worth at least 0.001 RBT`)
  if (total % r.ftCount !== 0) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `ft_count ${r.ftCount} does not divide ${r.tokenCount} RBT into equal FTs of whole milli-RBT (0.001) values; ${nearestDivisors(total, r.ftCount)}`)
  }
  return total / r.ftCount
}

function nearestDivisors (total: number, n: number): string {
  let lo = n - 1
  while (lo > 0 && total % lo !== 0) lo--
  let hi = n + 1
  while (hi <= total && total % hi !== 0) hi++
  const opts = [lo > 0 ? lo : undefined, hi <= total ? hi : undefined].filter((x): x is number => x !== undefined)
  return `the nearest counts that do are ${opts.join(' and ')}`
}

export interface Backing { tokenId: string, valueMilli: number }

/** Backing tokens in their canonical order (by token id). */
export const orderBacking = (b: readonly Backing[]): Backing[] => [...b].sort((x, y) => x.tokenId < y.tokenId ? -1 : x.tokenId > y.tokenId ? 1 : 0)

/** Parents of the FT at position `j` (0-based within the mint): the ordered backing tokens its value slice overlaps. */
export function ftParents (ordered: readonly Backing[], j: number, valueMilli: number): string[] {
  const lo = j * valueMilli
  const hi = lo + valueMilli
  const out: string[] = []
  let at = 0
  for (const b of ordered) {
    const end = at + b.valueMilli
    if (at < hi && end > lo) out.push(b.tokenId)
    if (end >= hi) break
    at = end
  }
  return out
}

/** Comment of the "13" block that commits the backing tokens to a mint. */
export const ftBurnComment = (count: number, start: number, name: string): string => `Burnt for FT : ${count} from ${start} for FT Name : ${name}`
const BURN_RE = /^Burnt for FT : (\d+) from (\d+) for FT Name : (.+)$/

export function parseFtBurnComment (comment: string | undefined): { count: number, start: number, name: string } | undefined {
  const m = BURN_RE.exec(comment ?? '')
  if (m === null) return undefined
  const count = Number(m[1]); const start = Number(m[2])
  if (!Number.isSafeInteger(count) || !Number.isSafeInteger(start)) return undefined
  return { count, start, name: m[3]! }
}

export interface FtMintPlanInput {
  creator: string
  name: string
  startIndex: number
  count: number
  valueMilli: number
  /** backing tokens with the latest block of each (the burn continues them) */
  backing: Array<Backing & { latest: Block }>
  /** genesis comment (reference format: "FT generated at : <time> for FT Name : <name>") */
  genesisComment: string
  groupSize?: number
}

export interface FtGenesisGroup { block: Block, ids: string[], indexes: number[] }
export interface FtMintPlan {
  /** unsigned "13" block burning every backing token for the mint */
  burn: Block
  /** unsigned genesis blocks, each describing up to `groupSize` FTs */
  groups: FtGenesisGroup[]
  ids: string[]
}

/** The blocks of a mint, unsigned: the creator signs the burn block and each genesis group. */
export function planFtMint (i: FtMintPlanInput): FtMintPlan {
  const ordered = orderBacking(i.backing)
  const latest = new Map(i.backing.map((b) => [b.tokenId, b.latest]))
  const tokens: Record<string, TransTokenEntry> = {}
  for (const b of ordered) tokens[b.tokenId] = nextTokenEntry(latest.get(b.tokenId)!, b.tokenId)
  const burn = createBlock({
    transactionType: TransactionType.BURNT_FOR_FT,
    owner: i.creator,
    transInfo: { comment: ftBurnComment(i.count, i.startIndex, i.name), tokens },
    childTokens: []
  })
  const size = i.groupSize ?? FT_GENESIS_GROUP
  const groups: FtGenesisGroup[] = []
  const ids: string[] = []
  for (let g = 0; g < i.count; g += size) {
    const info: Record<string, GenesisTokenInfo> = {}
    const entries: Record<string, TransTokenEntry> = {}
    const gIds: string[] = []
    const indexes: number[] = []
    for (let j = g; j < Math.min(i.count, g + size); j++) {
      const index = i.startIndex + j
      const id = ftTokenId(i.name, index, i.creator)
      info[id] = { level: 0, number: index, parentId: ftParents(ordered, j, i.valueMilli).join(','), committedTokens: {} }
      entries[id] = genesisEntry(TokenType.FT)
      gIds.push(id); indexes.push(index); ids.push(id)
    }
    const content: BlockContent = {
      transactionType: TransactionType.GENERATED,
      owner: i.creator,
      genesis: { type: '', info },
      transInfo: { comment: i.genesisComment, tokens: entries },
      tokenValue: i.valueMilli / 1000,
      childTokens: []
    }
    groups.push({ block: createBlock(content), ids: gIds, indexes })
  }
  return { burn, groups, ids }
}

export const FT_GENESIS_NAME_RE = / for FT Name : (.+)$/
/** FT name stated by a genesis comment. */
export const ftNameOfComment = (comment: string | undefined): string | undefined => FT_GENESIS_NAME_RE.exec(comment ?? '')?.[1]

export interface FtBackingFacts {
  ftId: string
  creator: string
  name: string
  index: number
  valueMilli: number
  parents: string[]
}

export interface BurnFacts {
  owner: string
  comment?: string
  /** backing tokens burnt by the block with the value each had before the burn */
  backing: Backing[]
}

/**
 * Checks the backing of one FT against the "13" block its parents end with: burnt by the FT's
 * creator for this name, the index inside the mint, the FT values adding up to the burnt RBT, and
 * the parents being exactly the backing tokens the FT's value slice overlaps. Answers a reason, or
 * undefined when the backing holds.
 */
export function ftBackingProblem (ft: FtBackingFacts, burn: BurnFacts): string | undefined {
  if (burn.owner !== ft.creator) return `FT ${ft.ftId}: its backing was burnt by ${burn.owner}, not by the creator ${ft.creator}`
  const m = parseFtBurnComment(burn.comment)
  if (m === undefined) return `FT ${ft.ftId}: the backing block does not state a mint`
  if (m.name !== ft.name) return `FT ${ft.ftId}: the backing was burnt for FT "${m.name}", not "${ft.name}"`
  if (ft.index < m.start || ft.index >= m.start + m.count) return `FT ${ft.ftId}: number ${ft.index} is outside the mint ${m.start}..${m.start + m.count - 1}`
  const total = burn.backing.reduce((s, b) => s + b.valueMilli, 0)
  if (total !== m.count * ft.valueMilli) return `FT ${ft.ftId}: ${m.count} FTs of ${ft.valueMilli / 1000} RBT are not backed by the ${total / 1000} RBT burnt`
  const want = ftParents(orderBacking(burn.backing), ft.index - m.start, ft.valueMilli)
  if (want.join(',') !== ft.parents.join(',')) return `FT ${ft.ftId}: names parents ${ft.parents.join(',')}, its value slice is backed by ${want.join(',')}`
  return undefined
}

export { TokenType }
