import { randomBytes } from 'node:crypto'
import { decodeContract } from '../tokenchain/contract.js'
import { sha3Hex } from '../tokenchain/hash.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import type { SignatureVerifier } from '../tokenchain/validate.js'
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

/** The state hashes a contract spends (`tokenStateHash(token, blockId)` of its tokens). */
export function contractSpends (contract: Uint8Array): Set<string> {
  const ti = decodeContract(contract).content.transInfo
  return new Set(Object.entries(ti.transTokens ?? {}).map(([id, t]) => tokenStateHash(id, t.blockId ?? '')))
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
  try { contract = decodeContract(auth.contract) } catch (e) { return `the contract does not decode: ${errorMessage(e)}` }
  if (contract.transactionId !== forTx) return 'the contract is not the transaction claimed for'
  const ti = contract.content.transInfo
  const sender = ti.sender
  if (sender === undefined || sender === quorum || ti.receiver === quorum) return 'the claimant is not a quorum of this transaction'
  const spends = new Set(Object.entries(ti.transTokens ?? {}).map(([id, t]) => tokenStateHash(id, t.blockId ?? '')))
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
