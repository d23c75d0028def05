import { DidSigner, QuorumSigner, verifyDidSignature, verifyPvtSignature } from '../wallet/did-crypto.js'
import type { DidDocument } from '../wallet/did-document.js'
import type { ConsensusSigner, Verifier } from './ports.js'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const unhex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'))

/** A DID's own signer (may prompt through the two-step flow) as consensus sees it. */
export function ownerSigner (s: DidSigner): ConsensusSigner {
  return {
    did: s.doc.did,
    signHash: async (hashHex) => {
      const sig = await s.sign(hashHex)
      return { keySig: hex(sig.keySig), shareSig: hex(sig.shareSig), signType: sig.shareSig.length > 0 ? 1 : 0 }
    },
    pvtSign: async (message) => hex(await s.pvtSign(message))
  }
}

/** A set-up quorum's signer (opened once, never prompts). */
export function quorumSigner (q: QuorumSigner): ConsensusSigner {
  return {
    did: q.doc.did,
    signHash: async (hashHex) => {
      const sig = q.sign(hashHex)
      return { keySig: hex(sig.keySig), shareSig: hex(sig.shareSig), signType: sig.shareSig.length > 0 ? 1 : 0 }
    },
    pvtSign: async (message) => hex(q.pvtSign(message))
  }
}

/** Verifies signatures of any DID whose public document `resolve` can find (locally or on the network). */
export function walletVerifier (resolve: (did: string) => Promise<DidDocument>): Verifier {
  return {
    verify: async (did, message, signatureHex, role) => {
      if (!/^[0-9a-f]*$/i.test(signatureHex) || signatureHex.length === 0) return false
      return verifyPvtSignature(await resolve(did), message, unhex(signatureHex), { quorum: role === 'quorum' })
    },
    verifyNlss: async (did, message, shareHex, keyHex, role) => {
      if (!/^[0-9a-f]*$/i.test(shareHex + keyHex) || keyHex.length === 0) return false
      return verifyDidSignature(await resolve(did), message, { shareSig: unhex(shareHex), keySig: unhex(keyHex) }, { quorum: role === 'quorum' })
    }
  }
}
