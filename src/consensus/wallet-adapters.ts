import type { DidSigner, QuorumSigner } from '../wallet/did-crypto.js'
import type { ConsensusSigner } from './ports.js'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')

/** A DID's own signer (may prompt through the two-step flow) as consensus sees it. */
export function ownerSigner (s: DidSigner): ConsensusSigner {
  return {
    did: s.doc.did,
    signHash: async (hashHex) => {
      const sig = await s.sign(hashHex)
      return { keySig: hex(sig.keySig), shareSig: hex(sig.shareSig), signType: sig.shareSig.length > 0 ? 1 : 0 }
    },
    pvtSign: async (message) => hex(await s.pvtSign(message)),
    unlock: async () => await s.unlock()
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
