import { sha3Hex } from '../../tokenchain/hash.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import type { SpentMarker, SpentMarkers, ConsensusSigner } from '../../consensus/ports.js'
import type { Collection } from '../../storage/kv-store.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import type { P2pHost } from '../../p2p/host.js'

/** DHT key of the network-wide "this token state is spent" record. */
export const spentKey = (stateHash: string): string => `/rbt/spent/${stateHash}`
/** Gossipsub topic on which quorums also spread their spent markers. */
export const SPENT_TOPIC = '/rbt/spent/1.0.0'

interface MarkerRecord extends SpentMarker { sig: string }

const digest = (stateHash: string, m: SpentMarker): string => sha3Hex(new TextEncoder().encode(`${stateHash}|${m.txid}|${m.blockId}|${m.quorum}`))

function parse (bytes: Uint8Array): MarkerRecord | undefined {
  try {
    const r = JSON.parse(new TextDecoder().decode(bytes)) as MarkerRecord
    return typeof r.txid === 'string' && typeof r.blockId === 'string' && typeof r.quorum === 'string' && typeof r.sig === 'string' ? r : undefined
  } catch { return undefined }
}

const STATE_RE = /^Qm[1-9A-HJ-NP-Za-km-z]{44}$/

/** What a quorum signs for a batch: every (state, new block) of one transaction, sorted by state hash. */
const batchDigest = (quorum: string, txid: string, items: ReadonlyArray<{ stateHash: string, blockId: string }>): string =>
  sha3Hex(new TextEncoder().encode(`batch|${txid}|${quorum}|${items.map((it) => `${it.stateHash}:${it.blockId}`).join(',')}`))

interface BatchMessage { quorum: string, txid: string, items: Array<{ stateHash: string, blockId: string }>, sig: string }

function parseBatch (bytes: Uint8Array): BatchMessage | undefined {
  try {
    const m = (JSON.parse(new TextDecoder().decode(bytes)) as { batch?: BatchMessage }).batch
    if (m === undefined || typeof m.quorum !== 'string' || typeof m.txid !== 'string' || typeof m.sig !== 'string' || !Array.isArray(m.items) || m.items.length > 100_000) return undefined
    if (!m.items.every((it) => typeof it?.stateHash === 'string' && STATE_RE.test(it.stateHash) && typeof it.blockId === 'string')) return undefined
    for (let i = 1; i < m.items.length; i++) if (!(m.items[i - 1]!.stateHash < m.items[i]!.stateHash)) return undefined
    return { quorum: m.quorum, txid: m.txid, sig: m.sig, items: m.items.map((it) => ({ stateHash: it.stateHash, blockId: it.blockId })) }
  } catch { return undefined }
}

export interface NodeSpentMarkers extends SpentMarkers {
  /** a marker received by gossip: kept after its signature verifies */
  receive: (bytes: Uint8Array) => Promise<void>
}

/**
 * Spent markers signed by the quorum that publishes them and verified on read, so a forged record
 * cannot block a token. Kept locally (own commits and gossip), in the DHT (for nodes that were
 * offline), and spread over gossipsub. A lookup answers from the local set at once and asks the
 * DHT for a bounded time.
 */
export function nodeSpentMarkers (opts: {
  host: () => P2pHost | undefined
  verifier: SignatureVerifier
  signerFor: (did: string) => ConsensusSigner | undefined
  local: Collection<MarkerRecord & { stateHash: string }>
  dhtTimeoutMs?: number
  log: Logger
}): NodeSpentMarkers {
  const verified = async (stateHash: string, r: MarkerRecord): Promise<boolean> =>
    await opts.verifier.verify(r.quorum, digest(stateHash, r), r.sig, 'quorum').catch(() => false)
  return {
    known: async (stateHash) => {
      const mine = await opts.local.get(stateHash)
      return mine === undefined ? undefined : { txid: mine.txid, blockId: mine.blockId, quorum: mine.quorum }
    },
    lookup: async (stateHash) => {
      const h = opts.host()
      if (h === undefined) return undefined
      let bytes: Uint8Array
      try {
        bytes = await h.getValue(spentKey(stateHash), { timeoutMs: opts.dhtTimeoutMs ?? 2000 })
      } catch (e) {
        if (e instanceof RbtError && (e.code === ErrorCode.NOT_FOUND || e.code === ErrorCode.TIMEOUT)) return undefined
        throw e
      }
      const rec = parse(bytes)
      if (rec === undefined || !await verified(stateHash, rec)) return undefined
      await opts.local.put(stateHash, { ...rec, stateHash })
      return { txid: rec.txid, blockId: rec.blockId, quorum: rec.quorum }
    },
    publish: async (stateHash, m, o) => {
      const signer = opts.signerFor(m.quorum)
      if (signer === undefined) return
      const rec: MarkerRecord = { ...m, sig: await signer.pvtSign(digest(stateHash, m)) }
      await opts.local.put(stateHash, { ...rec, stateHash })
      const h = opts.host()
      if (h === undefined) return
      const bytes = new TextEncoder().encode(JSON.stringify(rec))
      if (o?.gossip !== false) h.publish(SPENT_TOPIC, new TextEncoder().encode(JSON.stringify({ stateHash, ...rec }))).catch(() => {})
      if (o?.dht !== false) await h.putValue(spentKey(stateHash), bytes, { timeoutMs: 15_000 }).catch((e) => { opts.log.debug(`DHT spent marker ${stateHash}: ${errorMessage(e)}`) })
    },
    publishBatch: async (quorum, txid, items) => {
      const signer = opts.signerFor(quorum)
      if (signer === undefined || items.length === 0) return
      const sorted = [...items].sort((a, b) => a.stateHash < b.stateHash ? -1 : a.stateHash > b.stateHash ? 1 : 0)
      const sig = await signer.pvtSign(batchDigest(quorum, txid, sorted))
      await Promise.all(sorted.map(async (it) => { await opts.local.put(it.stateHash, { txid, blockId: it.blockId, quorum, sig, stateHash: it.stateHash }) }))
      const h = opts.host()
      if (h === undefined) return
      await h.publish(SPENT_TOPIC, new TextEncoder().encode(JSON.stringify({ batch: { quorum, txid, items: sorted, sig } }))).catch(() => {})
    },
    receive: async (bytes) => {
      const b = parseBatch(bytes)
      if (b !== undefined) {
        const have = await opts.local.getMany(b.items.map((it) => it.stateHash))
        const fresh = b.items.filter((_it, i) => have[i] === undefined)
        if (fresh.length === 0) return
        if (!await opts.verifier.verify(b.quorum, batchDigest(b.quorum, b.txid, b.items), b.sig, 'quorum').catch(() => false)) return
        await Promise.all(fresh.map(async (it) => { await opts.local.put(it.stateHash, { txid: b.txid, blockId: it.blockId, quorum: b.quorum, sig: b.sig, stateHash: it.stateHash }) }))
        return
      }
      const r = parse(bytes) as (MarkerRecord & { stateHash?: unknown }) | undefined
      if (r === undefined || typeof r.stateHash !== 'string' || !/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/.test(r.stateHash)) return
      if (await opts.local.get(r.stateHash) !== undefined) return
      if (await verified(r.stateHash, r)) await opts.local.put(r.stateHash, { txid: r.txid, blockId: r.blockId, quorum: r.quorum, sig: r.sig, stateHash: r.stateHash })
    }
  }
}
