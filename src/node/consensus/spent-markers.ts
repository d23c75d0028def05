import { sha3Hex } from '../../tokenchain/hash.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import type { SpentMarker, SpentMarkers, ConsensusSigner } from '../../consensus/ports.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import type { P2pHost } from '../../p2p/host.js'

/** DHT key of the network-wide "this token state is spent" record. */
export const spentKey = (stateHash: string): string => `/rbt/spent/${stateHash}`

interface MarkerRecord extends SpentMarker { sig: string }

const digest = (stateHash: string, m: SpentMarker): string => sha3Hex(new TextEncoder().encode(`${stateHash}|${m.txid}|${m.blockId}|${m.quorum}`))

/**
 * Spent markers as DHT records, signed by the quorum that publishes them and verified on read, so
 * a forged record cannot block a token.
 */
export function dhtSpentMarkers (host: () => P2pHost | undefined, verifier: SignatureVerifier, signerFor: (did: string) => ConsensusSigner | undefined): SpentMarkers {
  return {
    lookup: async (stateHash) => {
      const h = host()
      if (h === undefined) return undefined
      let bytes: Uint8Array
      try {
        bytes = await h.getValue(spentKey(stateHash), { timeoutMs: 2000 })
      } catch (e) {
        if (e instanceof RbtError && (e.code === ErrorCode.NOT_FOUND || e.code === ErrorCode.TIMEOUT)) return undefined
        throw e
      }
      let rec: MarkerRecord
      try { rec = JSON.parse(new TextDecoder().decode(bytes)) as MarkerRecord } catch { return undefined }
      if (typeof rec.txid !== 'string' || typeof rec.blockId !== 'string' || typeof rec.quorum !== 'string' || typeof rec.sig !== 'string') return undefined
      const okSig = await verifier.verify(rec.quorum, digest(stateHash, rec), rec.sig, 'quorum').catch(() => false)
      return okSig ? { txid: rec.txid, blockId: rec.blockId, quorum: rec.quorum } : undefined
    },
    publish: async (stateHash, m) => {
      const h = host()
      const signer = signerFor(m.quorum)
      if (h === undefined || signer === undefined) return
      const sig = await signer.pvtSign(digest(stateHash, m))
      const rec: MarkerRecord = { ...m, sig }
      await h.putValue(spentKey(stateHash), new TextEncoder().encode(JSON.stringify(rec)), { timeoutMs: 15_000 })
    }
  }
}
