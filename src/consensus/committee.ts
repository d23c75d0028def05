import { sha3Hex } from '../tokenchain/hash.js'
import type { SignatureVerifier } from '../tokenchain/validate.js'
import { grantDigest } from './claim-proofs.js'
import { CLAIM_ARBITERS, claimThreshold } from './claims.js'

/**
 * The arbiter committee and the certificates it signs (docs/decisions/0027-cheating-owner-claims.md).
 * Arbiters are DIDs, not peer ids: a committee is a set of DIDs every honest node computes the same
 * way, a state's arbiters are the committee (or, past k members, the k DIDs closest to the state's
 * key), and a certificate is q(n) grants over one (state, transaction) signed by distinct arbiters
 * of that state. Anyone holding the committee checks a certificate with no network; two
 * certificates for one state with different transactions name the arbiters that granted twice.
 */

/** Fewest arbiters a committee must have for a claim to be safe against one lying arbiter (q(n) leaves two in common). */
export const COMMITTEE_MIN = 4

export interface Committee {
  /** the member DIDs, sorted and unique */
  readonly members: readonly string[]
  /** an id of the member set (hash of the sorted DIDs): two nodes with the same id count the same arbiters */
  readonly id: string
}

export function committeeOf (dids: Iterable<string>): Committee {
  const members = [...new Set(dids)].sort()
  return { members, id: sha3Hex(members.join(',')) }
}

/** Why a committee cannot give a safe answer (too small), or undefined. */
export function committeeUnsafe (c: Committee): string | undefined {
  return c.members.length < COMMITTEE_MIN ? `only ${c.members.length} arbiter(s) in the committee, at least ${COMMITTEE_MIN} are needed for a claim to hold against one that lies` : undefined
}

const keyOf = (s: string): bigint => BigInt('0x' + sha3Hex(s))

/** The arbiters of a state: every member up to k, else the k members whose key is closest (XOR) to the state's. */
export function arbitersFor (stateHash: string, c: Committee, k = CLAIM_ARBITERS): string[] {
  if (c.members.length <= k) return [...c.members]
  const target = keyOf(stateHash)
  return [...c.members].map((d) => [d, keyOf(d) ^ target] as const).sort((a, b) => a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0).slice(0, k).map(([d]) => d)
}

/** One arbiter's signed grant, as it travels in a certificate: the claim it answered and the states its signature covers. */
export interface GrantEvidence { arbiter: string, sig: string, txid: string, quorum: string, forTx: string, states: string[] }

/** The grants that hold one state for one transaction. */
export interface Certificate { stateHash: string, txid: string, grants: GrantEvidence[] }

/** The arbiters of the state whose grant in `cert` is for it and verifies (each counted once). */
export async function validGrants (cert: Certificate, c: Committee, verifier: SignatureVerifier): Promise<string[]> {
  const arbiters = new Set(arbitersFor(cert.stateHash, c))
  // each grant verified on its own, the arbiters counted once afterwards: a forged grant naming an
  // arbiter ahead of its real one must not hide the real one
  const ok = await Promise.all(cert.grants.map(async (g) => {
    if (!arbiters.has(g.arbiter) || g.txid !== cert.txid || !g.states.includes(cert.stateHash)) return undefined
    return await verifier.verify(g.arbiter, grantDigest(g.arbiter, g.txid, g.quorum, g.forTx, g.states), g.sig, 'quorum').catch(() => false) ? g.arbiter : undefined
  }))
  return [...new Set(ok.filter((a): a is string => a !== undefined))]
}

/** Checks a certificate against a committee: why it does not hold, or undefined when it does. */
export async function checkCertificate (cert: Certificate, c: Committee, verifier: SignatureVerifier): Promise<string | undefined> {
  const unsafe = committeeUnsafe(c)
  if (unsafe !== undefined) return unsafe
  const n = arbitersFor(cert.stateHash, c).length
  const q = claimThreshold(n)
  const good = await validGrants(cert, c, verifier)
  return good.length >= q ? undefined : `the certificate of state ${cert.stateHash} holds ${good.length} valid grant(s) of its ${n} arbiters, ${q} needed`
}

/**
 * Two certificates of one state for different transactions: the arbiters that signed a valid grant
 * in both (the proof that they granted twice). Empty when they do not conflict.
 */
export async function doubleGranters (a: Certificate, b: Certificate, c: Committee, verifier: SignatureVerifier): Promise<string[]> {
  if (a.stateHash !== b.stateHash || a.txid === b.txid) return []
  const [ga, gb] = await Promise.all([validGrants(a, c, verifier), validGrants(b, c, verifier)])
  const inB = new Set(gb)
  return ga.filter((d) => inB.has(d))
}
