/**
 * Signature verification for token chains backed by DID documents: the tokenchain validator's
 * `SignatureVerifier`, with the public keys looked up through a `DidResolver`.
 */
import type { ChainValidator, SignatureVerifier, SignerRole } from '../tokenchain/index.js'
import { verifyDidSignature, verifyPvtSignature, type DidDocument } from '../wallet/index.js'
import { ErrorCode, RbtError } from '../util/errors.js'

/** Finds the public DID document of a DID (local store, peers, DHT: the implementation decides). */
export interface DidResolver {
  resolve: (did: string) => Promise<DidDocument | undefined>
}

const HEX_RE = /^(?:[0-9a-fA-F]{2})+$/
const hexBytes = (s: string): Uint8Array | undefined => HEX_RE.test(s) ? new Uint8Array(Buffer.from(s, 'hex')) : undefined

/** Where whole chains may be validated instead (chain-validation-pool.ts); structural, to keep this module free of threads. */
export interface ChainValidatorSource {
  validatorFor: (resolver: DidResolver) => ChainValidator
}

/**
 * A verifier that resolves each signer's DID document (memoising per DID for the verifier's life).
 * With a `pool`, whole chains are validated there, against documents from the same resolver.
 */
export function didSignatureVerifier (resolver: DidResolver, opts?: { pool?: ChainValidatorSource }): SignatureVerifier {
  const docs = new Map<string, Promise<DidDocument | undefined>>()
  const docOf = async (did: string): Promise<DidDocument> => {
    let p = docs.get(did)
    if (p === undefined) {
      p = resolver.resolve(did)
      docs.set(did, p)
      p.catch(() => { docs.delete(did) })
    }
    const doc = await p
    if (doc === undefined) {
      docs.delete(did)
      throw new RbtError(ErrorCode.NOT_FOUND, `DID ${did} is unknown: its public keys could not be found`)
    }
    return doc
  }
  return {
    ...(opts?.pool !== undefined ? { chains: opts.pool.validatorFor(resolver) } : {}),
    verify: async (did, messageAsciiHex, signatureHex, role?: SignerRole) => {
      const sig = hexBytes(signatureHex)
      if (sig === undefined) return false
      return verifyPvtSignature(await docOf(did), messageAsciiHex, sig, { quorum: role === 'quorum' })
    },
    verifyNlss: async (did, messageAsciiHex, shareHex, keyHex, role?: SignerRole) => {
      const keySig = hexBytes(keyHex)
      const shareSig = shareHex === '' ? new Uint8Array(0) : hexBytes(shareHex)
      if (keySig === undefined || shareSig === undefined) return false
      return verifyDidSignature(await docOf(did), messageAsciiHex, { shareSig, keySig }, { quorum: role === 'quorum' })
    }
  }
}

/** A resolver over a fixed set of documents (tests, or DIDs already known). */
export function staticDidResolver (docs: Iterable<DidDocument>): DidResolver & { add: (d: DidDocument) => void } {
  const map = new Map<string, DidDocument>()
  for (const d of docs) map.set(d.did, d)
  return {
    resolve: async (did) => map.get(did),
    add: (d) => { map.set(d.did, d) }
  }
}
