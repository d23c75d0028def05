import { blockIdFor, decodeBlockEnvelope, parseBlockId, peekBlockEnvelope, tokenEntry } from '../tokenchain/block.js'
import { floatToMilliExact } from '../tokenchain/amount.js'
import { racFromTokenContent } from '../tokenchain/rac.js'
import { cidV0ForContent } from '../tokenchain/cid.js'
import { validateChain, validateExtension, type ChainTip, type VerifiedBlockCache } from '../tokenchain/validate.js'
import type { Verifier } from './ports.js'
import type { ChainBundle, SpentState } from './messages.js'
import type { Ledger, LedgerWriter, TokenState } from './ports.js'
import { ErrorCode, RbtError } from '../util/errors.js'
import { TokenType, TransactionType } from '../tokenchain/types.js'
import { ftBackingProblem, ftNameOfComment, type Backing } from '../tokens/ft.js'

/**
 * The guard against hostile bundles (docs/protocol.md, "Part-token ancestry"). A part is always
 * worth less than its parent (every part of a split is worth at least 0.001 RBT and the parts add
 * up to the parent) and a whole token is worth 1 RBT, so a valid part has at most 999 ancestors
 * whatever the payments that made it: honest use never comes near these bounds. They only stop a
 * peer that sends chains built to make a validator walk or hold too much.
 */
export const MAX_ANCESTRY = 4096
/**
 * Most bytes (blocks and token contents, before compression) one bundle may carry. An honest FT
 * transfer reaches tens of MiB: it carries the backing tokens' burn blocks, which list every FT of
 * the mint (66 MB for units of a 10,000-FT mint), so the bound sits well above that.
 */
export const MAX_BUNDLE_BYTES = 512 * 1024 * 1024
/** Most blocks one bundle may carry. */
export const MAX_BUNDLE_BLOCKS = 250_000

/**
 * A burnt part-token ancestor this node validated once (with its own ancestry, and the parts it was
 * burnt into adding up to its value): a burnt chain never changes, so what was checked stays true.
 * Kept in the ledger ('cs-ancestors'), with the ancestor's chain and its children's contents.
 */
export interface RememberedAncestor {
  /** hash of the burn block that ends the ancestor's chain */
  burnHash: string
  /** who burnt it (the children's creator) */
  owner: string
  /** the parts it was burnt into */
  children: string[]
  /** its own number of ancestors (0: a whole token) */
  depth: number
}

/**
 * The latest state of a token this node validated (docs/protocol.md, "Validated states"): its chain
 * through `blockId` was valid, ancestry and backing included, when this node checked it (or built
 * the block on a chain of its own). A chain is append-only and every block names the hash of the one
 * before, so a later chain whose block at that number has this id holds exactly the blocks that
 * were validated: only the blocks after it are left to check. Kept in the ledger ('cs-validated').
 */
export interface ValidatedState extends ChainTip {
  /** the token's number of part-token ancestors, when known */
  ancestors?: number
}

/** What a validator knows of ancestors and token states, and what it learns while validating a bundle. */
export interface AncestryMemory {
  recall: (tokenId: string) => Promise<RememberedAncestor | undefined>
  /** ancestors validated by this call, with the chain and contents to store beside them */
  learned: Map<string, { record: RememberedAncestor, chain: Uint8Array[], contents: Record<string, string> }>
  /** the latest validated state of a token (absent: every chain is validated whole) */
  validated?: (tokenId: string) => Promise<ValidatedState | undefined>
  /** token states validated by this call, newer than the ones known before */
  states: Map<string, ValidatedState>
  /** reads the validated states of these tokens at once, before `validated` asks for them one by one */
  preload: (tokenIds: readonly string[]) => Promise<void>
  /**
   * chains sent that do not hold the state of the token validated here (another block at its
   * number, or a shorter chain): where a second spend of one state may show (double-spends.ts)
   */
  diverged?: Map<string, readonly Uint8Array[]>
  /**
   * the chains of the bundle this call validated (tokens, part-token parents, an FT's backing
   * tokens), by token: the only bundle chains a validator may read the burnt ancestors from (a
   * chain of the bundle that validation skipped, because its ancestor or state was known here, is
   * whatever the sender put there)
   */
  checked?: Map<string, readonly Uint8Array[]>
}

/** An AncestryMemory over the ledger's 'cs-ancestors' and 'cs-validated' records (and what this memory learned already). */
export function ledgerAncestry (ledger: Pick<Ledger, 'record' | 'recordsByKey'>): AncestryMemory {
  const learned: AncestryMemory['learned'] = new Map()
  const states: AncestryMemory['states'] = new Map()
  // what preload read (null: no record), so a transfer's tokens cost one read rather than one each
  const read = new Map<string, ValidatedState | null>()
  return {
    learned,
    states,
    diverged: new Map(),
    checked: new Map(),
    recall: async (id) => learned.get(id)?.record ?? await ledger.record<RememberedAncestor>('cs-ancestors', id),
    validated: async (id) => {
      const s = states.get(id)
      if (s !== undefined) return s
      const r = read.get(id)
      return r !== undefined ? r ?? undefined : await ledger.record<ValidatedState>('cs-validated', id)
    },
    preload: async (ids) => {
      const todo = [...new Set(ids)].filter((id) => !states.has(id) && !read.has(id))
      const recs = await ledger.recordsByKey<ValidatedState>('cs-validated', todo)
      todo.forEach((id, i) => { read.set(id, recs[i] ?? null) })
    }
  }
}

/** Writes what `memory` learned (records, chains, the children's contents, token states) into a commit. */
export function storeLearned (w: LedgerWriter, memory: AncestryMemory | undefined): void {
  if (memory === undefined) return
  for (const [id, l] of memory.learned) {
    l.chain.forEach((b, i) => { w.putBlock(id, i, b) })
    for (const [c, content] of Object.entries(l.contents)) w.putRecord('cs-contents', c, content)
    w.putRecord('cs-ancestors', id, l.record)
  }
  for (const [id, s] of memory.states) putValidatedState(w, id, s)
}

/** Writes a validated token state (the caller has checked that it is not older than the stored one). */
export function putValidatedState (w: LedgerWriter, tokenId: string, s: ValidatedState): void {
  w.putRecord('cs-validated', tokenId, { ...s, tokenId })
}

/**
 * The states `block` (fully verified by the caller: its signatures hold) moves tokens to, for the
 * tokens whose state just before it this node validated: each new block is checked as the next
 * link of that state's chain (number, link, transition, signatures), so the state it leads to is
 * validated too. Tokens whose earlier state is not known here are left out.
 */
export async function statesAfter (block: Uint8Array, memory: Pick<AncestryMemory, 'validated' | 'preload'>, verifier: Verifier, cache?: VerifiedBlockCache): Promise<Map<string, ValidatedState>> {
  const out = new Map<string, ValidatedState>()
  if (memory.validated === undefined) return out
  const decoded = decodeBlockEnvelope(block)
  await memory.preload(Object.keys(decoded.content.transInfo.tokens))
  for (const [tokenId, e] of Object.entries(decoded.content.transInfo.tokens)) {
    const known = await memory.validated(tokenId)
    if (known === undefined || e.previousBlockId !== known.blockId) continue
    try {
      const r = await validateExtension(known, [block], { tokenId, verifier, cache })
      out.set(tokenId, stateOf(r.tip, known.ancestors, known.value))
    } catch { /* not a valid next link of what was validated: nothing learned */ }
  }
  return out
}

/**
 * Of `states` (tokens and the block ids of the states a transaction spends), the tokens this node
 * holds at that state: it stores their chain through that block and validated them there. Their
 * delivery then needs no chain (docs/protocol.md, "Validated states").
 */
export async function heldStates (ledger: Pick<Ledger, 'tokensById' | 'recordsByKey'>, states: readonly SpentState[]): Promise<string[]> {
  const stored = await ledger.tokensById(states.map((s) => s.tokenId), { content: false })
  const at = states.filter((s, i) => stored[i]?.latestBlockId === s.blockId)
  const validated = await ledger.recordsByKey<ValidatedState>('cs-validated', at.map((s) => s.tokenId))
  return at.filter((s, i) => validated[i]?.blockId === s.blockId).map((s) => s.tokenId)
}

/**
 * A token delivered without its chain: `block` is checked as the next link of the state this node
 * validated, which must also be where its stored chain (`stored`, its token record) ends. Undefined
 * when this node does not hold the token there (the sender is then asked for the chain); a block
 * that is not a valid next link throws. The new state is added to `memory.states`.
 */
export async function validateHeldToken (tokenId: string, block: Uint8Array, stored: Pick<TokenState, 'latestBlockId'> | undefined, verifier: Verifier, memory: AncestryMemory, cache?: VerifiedBlockCache): Promise<ChainTip | undefined> {
  const entry = decodeBlockEnvelope(block).content.transInfo.tokens[tokenId]
  const known = await memory.validated?.(tokenId)
  if (entry === undefined || known === undefined || stored === undefined || entry.previousBlockId !== known.blockId || stored.latestBlockId !== known.blockId) return undefined
  const r = await validateExtension(known, [block], { tokenId, verifier, cache })
  const state = stateOf(r.tip, known.ancestors, known.value)
  memory.states.set(tokenId, state)
  return state
}

const stateOf = (tip: ChainTip, ancestors: number | undefined, value: number | undefined): ValidatedState =>
  ({ ...tip, value: tip.value ?? value, ...(ancestors !== undefined ? { ancestors } : {}) })

/** An ancestor's chain (or a token's own) was neither in the bundle nor known here: the sender is to send it. */
export class AncestryMissing extends RbtError {
  constructor (readonly missing: string[], tokenId: string, message = `token ${tokenId}: the chain of its ancestor ${missing.join(', ')} was not supplied and is not known here`) {
    super(ErrorCode.NOT_FOUND, message, { details: { missing } })
    this.name = 'AncestryMissing'
  }
}

/** Checks a bundle against the byte and block guard (once per bundle object). */
const sizeChecked = new WeakSet<ChainBundle>()
export function checkBundleSize (bundle: ChainBundle): void {
  if (sizeChecked.has(bundle)) return
  let bytes = 0
  let blocks = 0
  for (const chain of Object.values(bundle.chains ?? {})) {
    if (!Array.isArray(chain)) throw new RbtError(ErrorCode.CHAIN_INVALID, 'a bundle chain is not a list of blocks')
    blocks += chain.length
    for (const b of chain) bytes += b instanceof Uint8Array ? b.byteLength : 0
  }
  for (const c of Object.values(bundle.contents ?? {})) bytes += typeof c === 'string' ? c.length : 0
  if (blocks > MAX_BUNDLE_BLOCKS) throw new RbtError(ErrorCode.CHAIN_INVALID, `bundle carries ${blocks} blocks, more than the ${MAX_BUNDLE_BLOCKS} accepted`)
  if (bytes > MAX_BUNDLE_BYTES) throw new RbtError(ErrorCode.CHAIN_INVALID, `bundle carries ${bytes} bytes, more than the ${MAX_BUNDLE_BYTES} accepted`)
  sizeChecked.add(bundle)
}

/** Merges bundles (the first one's chain wins for a token both carry). */
export function mergeBundles (...bundles: ChainBundle[]): ChainBundle {
  const out: ChainBundle = { chains: {}, contents: {} }
  for (const b of bundles) {
    for (const [id, c] of Object.entries(b.chains)) out.chains[id] ??= c
    for (const [id, c] of Object.entries(b.contents)) out.contents[id] ??= c
  }
  return out
}

export interface BuildBundleOptions {
  /**
   * Ancestor levels carried: 1 gives each part its parent's chain and its siblings' contents (what
   * a validator that remembers the older ancestors needs); absent: the whole ancestry.
   */
  levels?: number
}

/** Tokens collected into a bundle between two turns given to the event loop. */
const YIELD_EVERY = 32

/** Where a bundle's chains and token contents are read from. */
interface BundleSource {
  chains: (ids: readonly string[]) => Promise<Uint8Array[][]>
  content: (id: string) => Promise<string | undefined>
}

/** Collects the chains and token contents a validator needs for `tokenIds` (ancestors included). */
export async function buildBundle (ledger: Ledger, tokenIds: readonly string[], opts: BuildBundleOptions = {}): Promise<ChainBundle> {
  return await collectBundle({
    chains: async (ids) => await ledger.chains(ids),
    content: async (id) => (await ledger.token(id))?.content ?? await ledger.record<string>('cs-contents', id)
  }, tokenIds, opts)
}

/**
 * The part of `bundle` a validator needs for `tokenIds` (as buildBundle collects it from the
 * ledger), sharing its block arrays: for a validator that knows the other tokens' states.
 */
export async function pickBundle (bundle: ChainBundle, tokenIds: readonly string[], opts: BuildBundleOptions = {}): Promise<ChainBundle> {
  return await collectBundle({
    chains: async (ids) => ids.map((id) => bundle.chains[id] ?? []),
    content: async (id) => bundle.contents[id]
  }, tokenIds, opts)
}

async function collectBundle (source: BundleSource, tokenIds: readonly string[], opts: BuildBundleOptions): Promise<ChainBundle> {
  const levels = opts.levels ?? MAX_ANCESTRY
  const bundle: ChainBundle = { chains: {}, contents: {} }
  const addContent = async (id: string): Promise<void> => {
    if (bundle.contents[id] !== undefined) return
    const c = await source.content(id)
    if (c !== undefined) bundle.contents[id] = c
  }
  // chains are read a level at a time, all the tokens queued so far in one read (hundreds of parts
  // and their parents cost two reads, not one per token)
  const read = new Map<string, Uint8Array[]>()
  const chainOf = async (id: string): Promise<Uint8Array[]> => {
    let c = read.get(id)
    if (c === undefined) { c = (await source.chains([id]))[0]; read.set(id, c) }
    return c
  }
  // iterative, so a deep ancestry costs no stack
  const queue: Array<[string, number]> = tokenIds.map((id) => [id, 0])
  // read by index: shifting the array moved every later entry, for each of a bundle's hundreds of tokens
  for (let next = 0; next < queue.length; next++) {
    // a bundle of hundreds of tokens is read and decoded in one run of promise jobs: now and then the
    // node's other work (a message to send, a request to answer) gets a turn
    if (next % YIELD_EVERY === YIELD_EVERY - 1) await new Promise((resolve) => setImmediate(resolve))
    const [id, depth] = queue[next]
    if (bundle.chains[id] !== undefined) continue
    if (depth > levels) continue
    if (depth > MAX_ANCESTRY) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${id}: part-token ancestry deeper than ${MAX_ANCESTRY}`)
    if (!read.has(id)) {
      const ahead = [...new Set(queue.slice(next).filter(([q, d]) => d <= levels && bundle.chains[q] === undefined && !read.has(q)).map(([q]) => q))]
      const got = await source.chains(ahead)
      ahead.forEach((q, i) => read.set(q, got[i]))
    }
    const chain = read.get(id)!
    read.delete(id)
    if (chain.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `no chain stored for token ${id}`)
    bundle.chains[id] = chain
    const genesis = decodeBlockEnvelope(chain[0])
    // FTs have no token content
    if (!isFtGenesis(genesis, id)) await addContent(id)
    // a burnt token travels with the contents of the parts it was burnt into (its validator adds them up)
    if (chain.length > 1) for (const c of decodeBlockEnvelope(chain[chain.length - 1]).content.childTokens ?? []) await addContent(c)
    const parentId = genesis.content.genesis?.info[id]?.parentId
    if (isFtGenesis(genesis, id)) {
      // an FT: the backing tokens it names, and every token burnt with them for the mint
      for (const p of (parentId ?? '').split(',').filter((x) => x !== '')) {
        if (depth + 1 > levels) continue
        const pc = await chainOf(p)
        if (pc.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `no chain stored for token ${p}`)
        queue.push([p, depth + 1])
        for (const other of Object.keys(decodeBlockEnvelope(pc[pc.length - 1]).content.transInfo.tokens)) queue.push([other, depth + 1])
      }
    } else if (parentId !== undefined && parentId !== '' && genesis.content.genesis?.type === '') {
      // the parent's turn adds its chain and, from its last block, the contents of the parts it was burnt into (the siblings)
      if (depth + 1 <= levels) queue.push([parentId, depth + 1])
    }
  }
  return bundle
}

/**
 * Validates one token of a bundle: its whole chain, and for a part token the parent's chain (burnt
 * into exactly the children whose values add up to the parent's value), up the ancestry. With a
 * `memory`, an ancestor validated before is not validated again (nor need it be in the bundle), and
 * ancestors validated now are added to `memory.learned`. An ancestor neither supplied nor
 * remembered throws AncestryMissing.
 */
export async function validateBundleToken (bundle: ChainBundle, tokenId: string, verifier: Verifier, cache?: VerifiedBlockCache, memory?: AncestryMemory): Promise<ChainTip> {
  checkBundleSize(bundle)
  return (await validateTop(bundle, tokenId, verifier, cache, memory)).tip
}

/**
 * `validateBundleToken` for a validator that looks at every token of a transfer: an ancestry this
 * side lacks is added to `missing` (and undefined returned) instead of thrown, so that one answer
 * names every ancestor lacked.
 */
export async function validateBundleTokenOrCollect (bundle: ChainBundle, tokenId: string, verifier: Verifier, missing: string[], cache?: VerifiedBlockCache, memory?: AncestryMemory): Promise<ChainTip | undefined> {
  try {
    return await validateBundleToken(bundle, tokenId, verifier, cache, memory)
  } catch (e) {
    if (e instanceof AncestryMissing) { missing.push(...e.missing); return undefined }
    throw e
  }
}

/** The number of ancestors of a token validated by `validateBundleToken` (0: not a part). */
export async function validateBundleTokenDepth (bundle: ChainBundle, tokenId: string, verifier: Verifier, cache?: VerifiedBlockCache, memory?: AncestryMemory): Promise<{ tip: ChainTip, ancestors: number }> {
  checkBundleSize(bundle)
  const r = await validateTop(bundle, tokenId, verifier, cache, memory)
  return { tip: r.tip, ancestors: r.ancestors }
}

/**
 * A token of a bundle, from the latest state of it this memory knows validated (docs/protocol.md,
 * "Validated states"): a chain that holds that state needs only its later blocks checked, and no
 * chain at all when the state is its tip; a token with neither a chain nor a known state is asked
 * for (AncestryMissing). Without a known state in the chain, the whole chain and its ancestry.
 * What is validated here, newer than what was known, is added to `memory.states`.
 */
async function validateTop (bundle: ChainBundle, tokenId: string, verifier: Verifier, cache: VerifiedBlockCache | undefined, memory: AncestryMemory | undefined): Promise<{ tip: ChainTip, ancestors: number }> {
  const known = await memory?.validated?.(tokenId)
  const chain = bundle.chains[tokenId]
  const supplied = chain !== undefined && chain.length > 0
  if (known !== undefined) {
    if (!supplied) return { tip: known, ancestors: known.ancestors ?? 0 }
    const at = known.blockNumber
    if (at < chain.length && holdsBlock(chain[at], known.blockId)) {
      if (at === chain.length - 1) return { tip: known, ancestors: known.ancestors ?? 0 }
      const r = await validateExtension(known, chain.slice(at + 1), { tokenId, verifier, cache })
      const state = stateOf(r.tip, known.ancestors, known.value)
      memory!.states.set(tokenId, state)
      return { tip: state, ancestors: known.ancestors ?? 0 }
    }
    memory?.diverged?.set(tokenId, chain)
  } else if (!supplied && memory?.validated !== undefined) {
    throw new AncestryMissing([tokenId], tokenId, `token ${tokenId}: no chain was supplied and no state of it was validated here`)
  }
  const r = await validateWithDepth(bundle, tokenId, verifier, cache, memory, 0)
  if (memory?.validated !== undefined && (known === undefined || r.tip.blockNumber > known.blockNumber)) memory.states.set(tokenId, stateOf(r.tip, r.ancestors, undefined))
  return r
}

/**
 * How many blocks at the start of `chain` this node stores already, given the latest block id of
 * its record of the token (the last block of its stored chain): that block's number plus one when
 * `chain` has that block there, else 0.
 */
export function storedPrefix (latestBlockId: string | undefined, chain: readonly Uint8Array[]): number {
  if (latestBlockId === undefined) return 0
  let n: number
  try { n = parseBlockId(latestBlockId).number } catch { return 0 }
  return n < chain.length && holdsBlock(chain[n], latestBlockId) ? n + 1 : 0
}

/**
 * Whether every block of `chain` from number `from` on names the block before it (by number and
 * hash) as the previous one of `tokenId`: a chain whose last block was validated is then, block
 * for block, the chain that block rests on. A validation from a known state checks only the blocks
 * after it; what comes before is the sender's word until its links are checked (no signature is).
 */
export function linksHold (chain: readonly Uint8Array[], tokenId: string, from = 1): boolean {
  try {
    for (let i = Math.max(1, from); i < chain.length; i++) {
      const e = tokenEntry(decodeBlockEnvelope(chain[i]!), tokenId)
      if (e?.previousBlockId === undefined) return false
      const prev = parseBlockId(e.previousBlockId)
      if (prev.number !== i - 1 || prev.hash !== peekBlockEnvelope(chain[i - 1]!).hash || Number(e.blockNumber) !== i) return false
    }
    return true
  } catch { return false }
}

/**
 * Is `envelope` the block `blockId` (of the chain it is found in, at that id's number)? Its hash
 * covers its content, token entries and numbers included, so the hash alone tells.
 */
function holdsBlock (envelope: Uint8Array, blockId: string): boolean {
  try { return peekBlockEnvelope(envelope).hash === parseBlockId(blockId).hash } catch { return false }
}

/**
 * The parent's side of a part: `parentId` burnt into `tokenId` by the part's creator. Validated in
 * a loop up the ancestry (no recursion), stopping at the first remembered ancestor.
 */
async function validateWithDepth (bundle: ChainBundle, tokenId: string, verifier: Verifier, cache: VerifiedBlockCache | undefined, memory: AncestryMemory | undefined, level: number): Promise<{ tip: ChainTip, ancestors: number }> {
  if (level > MAX_ANCESTRY) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: part-token ancestry deeper than ${MAX_ANCESTRY}`)
  const chain = bundle.chains[tokenId]
  if (chain === undefined || chain.length === 0) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: no chain supplied`)
  const res = await validateChain(chain, { tokenId, verifier, cache, tokenContent: bundle.contents[tokenId] })
  memory?.checked?.set(tokenId, chain)
  if (res.kind === 'ft') await validateFtBacking(bundle, tokenId, chain[0], verifier, cache, memory, level)
  if (res.kind !== 'part') return { tip: res.tip, ancestors: 0 }
  // walk up: each step checks `child` against its parent; the parent is remembered, or validated here
  const pending: Array<{ id: string, chain: Uint8Array[], parentId: string, tip: ChainTip, genesisOwner: string | undefined }> = []
  let child = { id: tokenId, chain, tip: res.tip, genesisOwner: res.genesisOwner }
  let ancestors = 0
  for (let step = level; ; step++) {
    if (step >= MAX_ANCESTRY) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: part-token ancestry deeper than ${MAX_ANCESTRY}`)
    const parentId = decodeBlockEnvelope(child.chain[0]).content.genesis?.info[child.id]?.parentId
    if (parentId === undefined || parentId === '') throw new RbtError(ErrorCode.CHAIN_INVALID, `part token ${child.id} names no parent`)
    const known = await memory?.recall(parentId)
    if (known !== undefined) {
      if (!known.children.includes(child.id)) throw new RbtError(ErrorCode.CHAIN_INVALID, `parent token ${parentId} was not burnt into ${child.id}`)
      if (known.owner !== child.genesisOwner) throw new RbtError(ErrorCode.CHAIN_INVALID, `part token ${child.id} was created by ${String(child.genesisOwner)}, the parent belonged to ${known.owner}`)
      ancestors = known.depth + 1
      break
    }
    const parentChain = bundle.chains[parentId]
    if (parentChain === undefined || parentChain.length === 0) {
      if (memory !== undefined) throw new AncestryMissing([parentId], tokenId)
      throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${parentId}: no chain supplied`)
    }
    const parentRes = await validateChain(parentChain, { tokenId: parentId, verifier, cache, tokenContent: bundle.contents[parentId] })
    if (parentRes.kind === 'ft') throw new RbtError(ErrorCode.CHAIN_INVALID, `part token ${child.id} names an FT as its parent`)
    checkBurnt(bundle, child.id, child.genesisOwner, parentId, parentChain, parentRes.tip)
    memory?.checked?.set(parentId, parentChain)
    pending.push({ id: parentId, chain: parentChain, parentId, tip: parentRes.tip, genesisOwner: parentRes.genesisOwner })
    if (parentRes.kind !== 'part') { ancestors = 0; break }
    child = { id: parentId, chain: parentChain, tip: parentRes.tip, genesisOwner: parentRes.genesisOwner }
  }
  // `ancestors` is now the depth of the topmost ancestor validated here (or one past a remembered one)
  const topDepth = ancestors
  if (topDepth + pending.length + level > MAX_ANCESTRY) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: part-token ancestry deeper than ${MAX_ANCESTRY}`)
  for (let i = pending.length - 1; i >= 0; i--) {
    const p = pending[i]
    const depth = topDepth + (pending.length - 1 - i)
    if (memory !== undefined) {
      const burn = decodeBlockEnvelope(p.chain[p.chain.length - 1])
      const contents: Record<string, string> = {}
      for (const c of burn.content.childTokens) if (bundle.contents[c] !== undefined) contents[c] = bundle.contents[c]
      if (bundle.contents[p.id] !== undefined) contents[p.id] = bundle.contents[p.id]
      memory.learned.set(p.id, { record: { burnHash: burn.hash, owner: burn.content.owner, children: [...burn.content.childTokens], depth }, chain: p.chain, contents })
    }
  }
  return { tip: res.tip, ancestors: topDepth + pending.length }
}

/** `parentId` (chain validated, tip `parentTip`) was burnt by the part's creator into parts, `childId` one of them, adding up to its value. */
function checkBurnt (bundle: ChainBundle, childId: string, childCreator: string | undefined, parentId: string, parentChain: Uint8Array[], parentTip: ChainTip): void {
  if (!parentTip.burnt) throw new RbtError(ErrorCode.CHAIN_INVALID, `parent token ${parentId} of ${childId} is not burnt`)
  const burn = decodeBlockEnvelope(parentChain[parentChain.length - 1])
  if (!burn.content.childTokens.includes(childId)) throw new RbtError(ErrorCode.CHAIN_INVALID, `parent token ${parentId} was not burnt into ${childId}`)
  if (burn.content.owner !== childCreator) throw new RbtError(ErrorCode.CHAIN_INVALID, `part token ${childId} was created by ${String(childCreator)}, the parent belonged to ${burn.content.owner}`)
  const parentValue = floatToMilliExact(parentTip.value ?? NaN)
  let sum = 0
  for (const child of burn.content.childTokens) {
    const content = bundle.contents[child]
    if (content === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `content of part ${child} (sibling of ${childId}) not supplied`)
    if (cidV0ForContent(content) !== child) throw new RbtError(ErrorCode.CHAIN_INVALID, `content supplied for part ${child} does not hash to its id`)
    const rac = racFromTokenContent(content)
    if (rac.content.partInfo?.parentId !== parentId) throw new RbtError(ErrorCode.CHAIN_INVALID, `part ${child} does not name ${parentId} as its parent`)
    const v = floatToMilliExact(rac.content.partInfo.value)
    // every part is worth something and less than its parent: ancestry stays finite
    if (v === undefined || v <= 0 || (parentValue !== undefined && v >= parentValue)) throw new RbtError(ErrorCode.CHAIN_INVALID, `part ${child} of ${parentId} has the bad value ${String(rac.content.partInfo.value)}`)
    sum += v
  }
  if (parentValue === undefined || sum !== parentValue) {
    throw new RbtError(ErrorCode.CHAIN_INVALID, `parts of ${parentId} add up to ${sum / 1000} RBT, the parent was worth ${String(parentTip.value)}`)
  }
}

/**
 * validate-token-chain with a block count (the reference counts from the latest block back): the
 * newest `blockCount` blocks of the token's chain, each checked for its number, its link to the block
 * before it, its transition and its signatures, starting from the stored block just before them,
 * taken as it is. `blockCount` 0, negative, or at least the chain's length: the whole chain with its
 * ancestry (validateBundleToken). Returns how many blocks of the token's chain were validated.
 */
export async function validateNewestBlocks (bundle: ChainBundle, tokenId: string, verifier: Verifier, blockCount: number): Promise<number> {
  const chain = bundle.chains[tokenId]
  if (chain === undefined || chain.length === 0) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: no chain supplied`)
  if (!Number.isSafeInteger(blockCount) || blockCount <= 0 || blockCount >= chain.length) {
    await validateBundleToken(bundle, tokenId, verifier)
    return chain.length
  }
  const anchorAt = chain.length - blockCount - 1
  const anchor = decodeBlockEnvelope(chain[anchorAt])
  const entry = tokenEntry(anchor, tokenId)
  if (entry === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId} block ${anchorAt}: block does not carry this token`, { details: { tokenId, blockNumber: anchorAt, check: 'token-entry' } })
  await validateExtension(blockIdFor(anchor, tokenId), chain.slice(anchorAt + 1), { tokenId, verifier, tipOwner: anchor.content.owner, tipTokenType: entry.tokenType })
  return blockCount
}

export const isFtGenesis = (genesis: ReturnType<typeof decodeBlockEnvelope>, id: string): boolean =>
  genesis.content.transInfo.tokens[id]?.tokenType === TokenType.FT

/** Backing tokens of one mint ("13" block hash → tokens with their values), per bundle: checked once. */
const burnMemo = new WeakMap<ChainBundle, Map<string, Promise<Backing[]>>>()

/**
 * An FT's backing (docs/protocol.md, "FTs"): the parents its genesis names end with one "13" block
 * of the creator that burns, for this FT name and number range, RBT worth exactly the mint's FTs;
 * every token of that block has a valid chain; the parents are the ones the FT's value slice overlaps.
 */
async function validateFtBacking (bundle: ChainBundle, ftId: string, genesisBytes: Uint8Array, verifier: Verifier, cache: VerifiedBlockCache | undefined, memory: AncestryMemory | undefined, level: number): Promise<void> {
  const bad = (msg: string): never => { throw new RbtError(ErrorCode.CHAIN_INVALID, msg) }
  const genesis = decodeBlockEnvelope(genesisBytes)
  const info = genesis.content.genesis?.info[ftId]
  const parents = (info?.parentId ?? '').split(',').filter((x) => x !== '')
  const name = ftNameOfComment(genesis.content.transInfo.comment)
  const valueMilli = floatToMilliExact(genesis.content.tokenValue ?? NaN)
  if (info === undefined || parents.length === 0 || name === undefined || valueMilli === undefined) return bad(`FT ${ftId}: the genesis does not state its backing`)
  const firstChain = bundle.chains[parents[0]]
  if (firstChain === undefined || firstChain.length === 0) return bad(`FT ${ftId}: the chain of its backing token ${parents[0]} was not supplied`)
  const burn = decodeBlockEnvelope(firstChain[firstChain.length - 1])
  if (burn.content.transactionType !== TransactionType.BURNT_FOR_FT) return bad(`FT ${ftId}: backing token ${parents[0]} was not burnt for FTs`)
  let memo = burnMemo.get(bundle)
  if (memo === undefined) { memo = new Map(); burnMemo.set(bundle, memo) }
  let pending = memo.get(burn.hash)
  if (pending === undefined) {
    pending = (async () => {
      const out: Backing[] = []
      for (const id of Object.keys(burn.content.transInfo.tokens)) {
        const chain = bundle.chains[id]
        if (chain === undefined || chain.length === 0) bad(`FT ${ftId}: the chain of backing token ${id} was not supplied`)
        if (decodeBlockEnvelope(chain[chain.length - 1]).hash !== burn.hash) bad(`FT ${ftId}: backing token ${id} does not end with the mint's burn`)
        const { tip } = await validateWithDepth(bundle, id, verifier, cache, memory, level + 1)
        const v = floatToMilliExact(tip.value ?? NaN)
        if (v === undefined || (tip.tokenType !== TokenType.RBT && tip.tokenType !== TokenType.TEST_RBT && tip.tokenType !== TokenType.PART && tip.tokenType !== TokenType.TEST_PART)) bad(`FT ${ftId}: backing token ${id} is not an RBT token with a value`)
        out.push({ tokenId: id, valueMilli: v! })
      }
      return out
    })()
    memo.set(burn.hash, pending)
  }
  const backing = await pending
  for (const p of parents) if (!backing.some((b) => b.tokenId === p)) bad(`FT ${ftId}: parent ${p} was not burnt with the mint's backing`)
  const problem = ftBackingProblem({ ftId, creator: genesis.content.owner, name, index: info.number, valueMilli, parents }, { owner: burn.content.owner, comment: burn.content.transInfo.comment, backing })
  if (problem !== undefined) bad(problem)
}
