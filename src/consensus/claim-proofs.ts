import { randomBytes } from 'node:crypto'
import { blockIdFor, decodeBlockEnvelope, parseBlockId, tokenEntry, type DecodedBlock } from '../tokenchain/block.js'
import { decodeContract } from '../tokenchain/contract.js'
import { bytesToHex, hexToBytes, sha3Hex } from '../tokenchain/hash.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import { TransactionType } from '../tokenchain/types.js'
import { GENESIS_ANCHOR, OWNER_ONLY, verifyEnvelope, type SignatureVerifier } from '../tokenchain/validate.js'
import { errorMessage } from '../util/errors.js'

/**
 * What makes a claim, a release and a grant prove themselves (docs/protocol.md, "Claims"). A
 * claimant shows the arbiter the sender's signed contract of the transaction it claims for and
 * signs the claim with its quorum DID over a nonce of its own; it gives the claim up, or answers an
 * arbiter's question `released`, only by signing that nonce again; an arbiter signs every grant
 * with its own DID. No claim is made, ended or counted on an unauthenticated word.
 */

const enc = new TextEncoder()
const digest = (...parts: string[]): string => sha3Hex(enc.encode(parts.join('|')))

/** What the claimant's quorum signs to claim states for `txid` (one nonce per claim it makes). */
export const claimDigest = (txid: string, quorum: string, nonce: string): string => digest('rbt-claim/1', txid, quorum, nonce)
/** What the claimant's quorum signs to give that claim up (a release, or a `released` answer). */
export const releaseDigest = (txid: string, quorum: string, nonce: string): string => digest('rbt-release/1', txid, quorum, nonce)
/** What the claimant's quorum signs to answer an arbiter that its transaction committed (a burnt ancestor's claim is kept for good on it). */
export const committedDigest = (txid: string, quorum: string, nonce: string): string => digest('rbt-committed/1', txid, quorum, nonce)
/**
 * What an arbiter DID signs for a grant: the states granted (sorted), the transaction that holds
 * them (`txid`: a burnt ancestor's burn block), the claimant quorum, and the transaction it claimed for.
 */
export const grantDigest = (arbiter: string, txid: string, quorum: string, forTx: string, stateHashes: readonly string[]): string =>
  digest('rbt-grant/1', arbiter, txid, quorum, forTx, [...stateHashes].sort().join(','))

/** A fresh claim nonce. */
export const claimNonce = (): string => randomBytes(16).toString('hex')
export const NONCE_RE = /^[0-9a-f]{32}$/

/**
 * The seal (docs/protocol.md, "Seals"): a quorum's claim nonce is the hash of a secret it keeps with
 * its vote and reveals only in its SIGN answer, once it signed the block. Showing an arbiter the
 * secrets of the signers' claims is their consent to make the claim permanent (sealed): nobody else
 * can seal a claim, and a quorum that has not signed has not consented.
 */
export const sealSecret = (): string => randomBytes(16).toString('hex')
/** The claim nonce whose secret is `secret` (what the quorum signs in its claim). */
export const nonceOfSecret = (secret: string): string => digest('rbt-seal-secret/1', secret).slice(0, 32)
/** Whether `secret` is the one behind claim nonce `nonce`. */
export const opensNonce = (secret: unknown, nonce: string): boolean => typeof secret === 'string' && NONCE_RE.test(secret) && nonceOfSecret(secret) === nonce

/** A signer's consent to seal its claim: its quorum, its claim's nonce and the secret behind it. */
export interface SealConsent { quorum: string, nonce: string, secret: string }

/**
 * A sealed grant as it travels: the arbiter's peer id and its peer-key signature over
 * peerSealBytes, saying that the states are spent by transaction `holder` for good at this arbiter
 * (a state's own transaction, or a burnt ancestor's burn block). An arbiter seals one holder per
 * state, ever: two holders sealed by enough arbiters of one state cannot both exist while fewer
 * than a third of them lie, whoever released what.
 */
export interface PeerSeal { peer: string, sig: string, holder: string, states: string[] }

/** The bytes an arbiter's peer key signs for a seal. */
export const peerSealBytes = (s: Omit<PeerSeal, 'sig'>): Uint8Array =>
  enc.encode(digest('rbt-peer-seal/1', s.peer, s.holder, [...s.states].sort().join(',')))

/** The proof a claimant sends with the states it claims for one transaction. */
export interface ClaimAuth {
  /** the sender-signed contract envelope of the transaction claimed for */
  contract: Uint8Array
  nonce: string
  /** the claimant quorum's key signature over claimDigest(txid, quorum, nonce) */
  sig: string
}

/** A release: the claimant quorum's signature over releaseDigest(txid, quorum, nonce). */
export interface ReleaseAuth { nonce: string, sig: string }

/** One arbiter's signed grant of some states for one claim. */
export interface SignedGrant { arbiter: string, sig: string }

/** A claimant of the sender's claim: a signer's quorum, its claim's nonce and its signature over claimDigest, and the peer that answers for it. */
export interface ClaimantProof { quorum: string, nonce: string, sig: string, peer?: string }

/**
 * A grant as it travels to a signer: the arbiter's peer id, its signature with its peer key over
 * peerGrantBytes, and what that covers. `txid` holds the states (a burnt ancestor's: its burn
 * block), `quorum` claimed them for `forTx` with the claim of `nonce`: a grant is of one claim, so
 * the grants of a claim its quorum released never count for a later claim of the same transaction.
 */
export interface PeerGrant { peer: string, sig: string, txid: string, quorum: string, nonce: string, forTx: string, states: string[] }

/** The bytes an arbiter's peer key signs for a grant. */
export const peerGrantBytes = (g: Omit<PeerGrant, 'sig'>): Uint8Array =>
  enc.encode(digest('rbt-peer-grant/2', g.peer, g.txid, g.quorum, g.nonce, g.forTx, [...g.states].sort().join(',')))

/**
 * The state hashes a contract spends (`tokenStateHash(token, blockId)` of its tokens), and for a
 * token spent at its genesis also its GENESIS_ANCHOR state, the one its claims are keyed on.
 */
export function contractSpends (contract: Uint8Array): Set<string> {
  return decoded(contract).spends
}

/** The sender a contract names (its transInfo's), '' when it names none. */
export function contractSender (contract: Uint8Array): string {
  return decoded(contract).contract.content.transInfo.sender ?? ''
}

// a contract's bytes decoded once, while those bytes are held (the five claimants of the sender's
// claim show one contract: a claim of 1,000 tokens was decoded ten times per request)
const decodedContracts = new WeakMap<Uint8Array, { contract: ReturnType<typeof decodeContract>, spends: Set<string> }>()
function decoded (bytes: Uint8Array): { contract: ReturnType<typeof decodeContract>, spends: Set<string> } {
  let d = decodedContracts.get(bytes)
  if (d === undefined) {
    const contract = decodeContract(bytes)
    d = { contract, spends: spendsOf(contract.content.transInfo.transTokens) }
    decodedContracts.set(bytes, d)
  }
  return d
}

function spendsOf (tokens: Record<string, { blockId?: string }> | undefined): Set<string> {
  const out = new Set<string>()
  for (const [id, t] of Object.entries(tokens ?? {})) {
    out.add(tokenStateHash(id, t.blockId ?? ''))
    let genesis = false
    try { genesis = parseBlockId(t.blockId ?? '').number === 0 } catch {}
    if (genesis) out.add(tokenStateHash(id, GENESIS_ANCHOR))
  }
  return out
}

/**
 * Checks a claim's proof before the arbiter writes anything: the contract decodes, is the
 * transaction `forTx`, is signed by its sender; the quorum is neither its sender nor its receiver
 * and signed the claim; every state in `direct` (claimed as spent by the transaction itself, not a
 * burnt ancestor) is one the contract spends. Answers why it is refused, or undefined.
 */
export async function checkClaimProof (forTx: string, quorum: string, auth: ClaimAuth, direct: readonly string[], verifier: SignatureVerifier): Promise<string | undefined> {
  if (typeof auth?.nonce !== 'string' || !NONCE_RE.test(auth.nonce) || typeof auth.sig !== 'string' || auth.sig.length > 1024 || !(auth.contract instanceof Uint8Array)) return 'a claim needs a nonce, the quorum\'s signature and the sender\'s contract'
  let contract
  let spends: Set<string>
  try { ({ contract, spends } = decoded(auth.contract)) } catch (e) { return `the contract does not decode: ${errorMessage(e)}` }
  if (contract.transactionId !== forTx) return 'the contract is not the transaction claimed for'
  const ti = contract.content.transInfo
  const sender = ti.sender
  if (sender === undefined || sender === quorum || ti.receiver === quorum) return 'the claimant is not a quorum of this transaction'
  const foreign = direct.find((h) => !spends.has(h))
  if (foreign !== undefined) return `the contract does not spend state ${foreign}`
  const keySig = contract.keySignatures[sender]
  if (keySig === undefined) return 'the contract is not signed by its sender'
  const share = contract.shareSignatures[sender] ?? ''
  const [senderOk, quorumOk] = await Promise.all([
    share !== ''
      ? verifier.verifyNlss?.(sender, contract.hash, share, keySig, 'owner').catch(() => false) ?? false
      : verifier.verify(sender, contract.hash, keySig, 'owner').catch(() => false),
    verifier.verify(quorum, claimDigest(forTx, quorum, auth.nonce), auth.sig, 'quorum').catch(() => false)
  ])
  if (!senderOk) return 'the sender\'s signature on the contract does not verify'
  if (!quorumOk) return 'the claimant quorum\'s signature on the claim does not verify'
  return undefined
}

/** Most blocks of a burn proof: the burnt state's block, the owner-only blocks after it, the burn. */
export const BURN_PROOF_MAX_BLOCKS = 16

/**
 * Checks the proof that comes with a burnt ancestor's claim (a state claimed with `via`, held by
 * the burn block `spender`): the envelopes (hex) of the block of the claimed state, the owner-only
 * blocks after it, and the burn, each linking to the one before; the burn is the block `spender`
 * and is signed by the owner of the claimed state. Without it, anyone with a contract of his own
 * could name any state as the "burnt ancestor" of his transaction and pin it for good: the contract
 * says nothing about ancestors. Answers why it is refused, or undefined.
 */
export async function checkBurnProof (stateHash: string, spender: string, proof: readonly string[] | undefined, verifier: SignatureVerifier): Promise<string | undefined> {
  if (!Array.isArray(proof) || proof.length < 2 || proof.length > BURN_PROOF_MAX_BLOCKS) return 'a burnt ancestor is claimed with its burn: the state\'s block, any owner-only blocks after it, and the burn'
  let blocks: DecodedBlock[]
  try { blocks = proof.map((h) => decodeBlockEnvelope(hexToBytes(h))) } catch (e) { return `the burn proof does not decode: ${errorMessage(e)}` }
  const first = blocks[0]!
  const burn = blocks[blocks.length - 1]!
  if (burn.hash !== spender) return 'the burn proof does not end with the block the state is claimed for'
  const t = burn.content.transactionType
  if (t !== TransactionType.BURNT && t !== TransactionType.BURNT_FOR_FT) return 'the block the state is claimed for is not a burn'
  const stateOf = (id: string): string => tokenEntry(first, id)?.blockNumber === '0' ? GENESIS_ANCHOR : blockIdFor(first, id)
  const tokenId = Object.keys(burn.content.transInfo.tokens).find((id) => tokenEntry(first, id) !== undefined && tokenStateHash(id, stateOf(id)) === stateHash)
  if (tokenId === undefined) return `the burn proof does not start at state ${stateHash}`
  for (let i = 1; i < blocks.length; i++) {
    if (tokenEntry(blocks[i]!, tokenId)?.previousBlockId !== blockIdFor(blocks[i - 1]!, tokenId)) return 'the blocks of the burn proof do not link'
    if (i < blocks.length - 1 && !OWNER_ONLY.has(blocks[i]!.content.transactionType)) return 'a burn proof passes only owner-only blocks between the state and its burn'
  }
  if (burn.content.owner !== first.content.owner) return 'the burn is not made by the owner of the state'
  try { await verifyEnvelope(burn.envelopeBytes, { verifier, tokenId }) } catch (e) { return `the burn's signature does not verify: ${errorMessage(e)}` }
  return undefined
}

/**
 * The paths a claim shows the arbiters for states before their tip (owner-only tips): by state
 * hash, the block envelopes (hex) from each state's block up to the tip the contract spends, as
 * checkAnchorPath takes them. `held` pairs each held state with the tip spent (`tokenId@blockId`
 * both); a token spent at its genesis shows none: it is claimed at GENESIS_ANCHOR, which the
 * arbiter reads off the contract (its genesis is, for minted FTs, the whole mint). The quorum that
 * votes and the sender that claims for it compute the same paths here.
 */
export async function anchorPaths (held: ReadonlyArray<{ state: string, tip: string }>, chainOf: (tokenId: string) => Promise<readonly Uint8Array[] | undefined>): Promise<Record<string, string[]>> {
  const paths: Record<string, string[]> = {}
  for (const { state, tip } of held) {
    if (state === tip) continue
    const at = state.indexOf('@')
    const tipAt = parseBlockId(tip.slice(tip.indexOf('@') + 1)).number
    if (tipAt === 0) continue
    const chain = await chainOf(state.slice(0, at))
    if (chain !== undefined) paths[tokenStateHash(state.slice(0, at), state.slice(at + 1))] = chain.slice(parseBlockId(state.slice(at + 1)).number, tipAt + 1).map(bytesToHex)
  }
  return paths
}

/**
 * The blocks that show who owns each state a sender's claim holds (docs/protocol.md, "Claims"): by
 * state hash, the block envelopes (hex) from the state's block (a token's genesis for a state at
 * GENESIS_ANCHOR) up to the tip the contract spends, as checkOwnedPath takes them. `held` pairs
 * each held state with the tip spent (`tokenId@blockId` both).
 */
export async function ownerPaths (held: ReadonlyArray<{ state: string, tip: string }>, chainOf: (tokenId: string) => Promise<readonly Uint8Array[] | undefined>): Promise<Record<string, string[]>> {
  const paths: Record<string, string[]> = {}
  for (const { state, tip } of held) {
    const at = state.indexOf('@')
    const tokenId = state.slice(0, at)
    const blockId = state.slice(at + 1)
    const from = blockId === GENESIS_ANCHOR ? 0 : parseBlockId(blockId).number
    const to = parseBlockId(tip.slice(tip.indexOf('@') + 1)).number
    const chain = await chainOf(tokenId)
    if (chain !== undefined && to < chain.length && from <= to) paths[tokenStateHash(tokenId, blockId)] = chain.slice(from, to + 1).map(bytesToHex)
  }
  return paths
}

/**
 * Checks that a claimed state is the contract sender's (a stranger who signs a contract of his own
 * naming another's token must not hold it): `blocks` are the state's block (block 0 for a state at
 * GENESIS_ANCHOR), hash-bound to the state by its id, whose owner must be `sender`, then the
 * owner-only blocks after it, each linking to the one before, up to a tip the contract spends
 * (`tips`, contractSpends). Answers why it does not hold, or undefined.
 */
export function checkOwnedPath (stateHash: string, blocks: readonly Uint8Array[] | undefined, tips: ReadonlySet<string>, sender: string): string | undefined {
  if (!Array.isArray(blocks) || blocks.length < 1 || blocks.length > BURN_PROOF_MAX_BLOCKS) return `a claim of state ${stateHash} shows the state's block (and any owner-only blocks after it up to the contract's tip)`
  let decoded: DecodedBlock[]
  try { decoded = blocks.map((b) => decodeBlockEnvelope(b)) } catch (e) { return `the blocks of state ${stateHash} do not decode: ${errorMessage(e)}` }
  const first = decoded[0]!
  const last = decoded[decoded.length - 1]!
  const stateOf = (id: string): string => tokenEntry(first, id)?.blockNumber === '0' ? GENESIS_ANCHOR : blockIdFor(first, id)
  const tokenId = Object.keys(last.content.transInfo.tokens).find((id) => tokenEntry(first, id) !== undefined && tokenStateHash(id, stateOf(id)) === stateHash && tips.has(tokenStateHash(id, blockIdFor(last, id))))
  if (tokenId === undefined) return `the blocks shown do not lead from state ${stateHash} to a tip the contract spends`
  for (let i = 1; i < decoded.length; i++) {
    if (tokenEntry(decoded[i]!, tokenId)?.previousBlockId !== blockIdFor(decoded[i - 1]!, tokenId)) return 'the blocks shown of a claimed state do not link'
    if (!OWNER_ONLY.has(decoded[i]!.content.transactionType)) return 'the blocks shown after a claimed state are owner-only blocks only'
  }
  if (first.content.owner !== sender) return `state ${stateHash} is not the contract sender's: its block names another owner`
  return undefined
}

/**
 * Checks the path that comes with a claim of a state before the contract's tip (a token whose tip is
 * an owner-only block is claimed at its last quorum-signed state): the envelopes (hex) of the
 * claimed state's block and the owner-only blocks after it up to the tip, each linking to the one
 * before. `tips`: the state hashes the contract spends. No signature is needed: the tip is bound by
 * the sender's signed contract and each block by its hash. Answers why it is refused, or undefined.
 */
export function checkAnchorPath (stateHash: string, path: readonly string[] | undefined, tips: ReadonlySet<string>): string | undefined {
  if (!Array.isArray(path) || path.length < 2 || path.length > BURN_PROOF_MAX_BLOCKS) return `the contract does not spend state ${stateHash}`
  let blocks: DecodedBlock[]
  try { blocks = path.map((h) => decodeBlockEnvelope(hexToBytes(h))) } catch (e) { return `the path to the contract's tip does not decode: ${errorMessage(e)}` }
  const first = blocks[0]!
  const last = blocks[blocks.length - 1]!
  const stateOf = (id: string): string => tokenEntry(first, id)?.blockNumber === '0' ? GENESIS_ANCHOR : blockIdFor(first, id)
  const tokenId = Object.keys(last.content.transInfo.tokens).find((id) => tokenEntry(first, id) !== undefined && tokenStateHash(id, stateOf(id)) === stateHash && tips.has(tokenStateHash(id, blockIdFor(last, id))))
  if (tokenId === undefined) return `the contract does not spend state ${stateHash}`
  for (let i = 1; i < blocks.length; i++) {
    if (tokenEntry(blocks[i]!, tokenId)?.previousBlockId !== blockIdFor(blocks[i - 1]!, tokenId)) return 'the blocks of the path to the contract\'s tip do not link'
    if (!OWNER_ONLY.has(blocks[i]!.content.transactionType)) return 'a path to the contract\'s tip passes owner-only blocks only'
  }
  return undefined
}
