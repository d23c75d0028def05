/**
 * Provide and find providers on Kubo's two DHTs as Kubo's dual DHT does: a provide goes to the WAN
 * table when it holds peers, else to the LAN one; a lookup asks both at once and merges what they
 * name. Callers may also name one table (`wan` or `lan`), for tests and operators.
 */
import type { KadDHT } from '@libp2p/kad-dht'
import type { CID } from 'multiformats/cid'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { deadline, raceAbort, withDeadline } from '../deadline.js'

export type KuboDhtName = 'wan' | 'lan'

export interface KuboProvider {
  peerId: string
  multiaddrs: string[]
  /** the tables that named it */
  dhts: KuboDhtName[]
}

export interface KuboRouting {
  /** Peers in each table's routing table. */
  tableSizes: () => Record<KuboDhtName, number>
  /** Announces `cid` on `dht` (default: WAN when it has peers, else LAN); returns the table used. */
  provide: (cid: CID, opts: { dht?: KuboDhtName, timeoutMs: number, signal?: AbortSignal }) => Promise<KuboDhtName>
  /** Providers found before the deadline on `dht` (default both), at most `limit`. */
  findProviders: (cid: CID, opts: { dht?: KuboDhtName, timeoutMs: number, limit?: number, signal?: AbortSignal }) => Promise<KuboProvider[]>
}

function tableSize (dht: KadDHT): number {
  return (dht as unknown as { routingTable?: { size?: number } }).routingTable?.size ?? 0
}

export function createKuboRouting (tables: Record<KuboDhtName, KadDHT>): KuboRouting {
  const sizes = (): Record<KuboDhtName, number> => ({ wan: tableSize(tables.wan), lan: tableSize(tables.lan) })
  return {
    tableSizes: sizes,
    provide: async (cid, opts) => {
      const name: KuboDhtName = opts.dht ?? (sizes().wan > 0 ? 'wan' : 'lan')
      if (sizes()[name] === 0) throw new RbtError(ErrorCode.PEER_UNREACHABLE, `Kubo ${name.toUpperCase()} DHT: no peers to provide ${cid.toString()} to`)
      await withDeadline(opts.timeoutMs, opts.signal, async (d) => {
        try {
          const run = async (): Promise<void> => { for await (const _ of tables[name].provide(cid, { signal: d.signal })) { /* progress events */ } }
          await raceAbort(run(), d.signal)
        } catch (e) {
          if (d.timedOut()) throw new RbtError(ErrorCode.TIMEOUT, `Kubo ${name.toUpperCase()} DHT provide ${cid.toString()}: not done within ${d.ms} ms`, { cause: e })
          throw new RbtError(ErrorCode.PEER_UNREACHABLE, `Kubo ${name.toUpperCase()} DHT provide ${cid.toString()} failed: ${errorMessage(e)}`, { cause: e })
        }
      })
      return name
    },
    findProviders: async (cid, opts) => {
      const names: KuboDhtName[] = opts.dht !== undefined ? [opts.dht] : ['wan', 'lan']
      const limit = opts.limit ?? 20
      const found = new Map<string, KuboProvider>()
      const d = deadline(opts.timeoutMs, opts.signal)
      const stop = new AbortController()
      const abort = (): void => { stop.abort() }
      d.signal.addEventListener('abort', abort, { once: true })
      const ask = async (name: KuboDhtName): Promise<void> => {
        try {
          for await (const ev of tables[name].findProviders(cid, { signal: stop.signal })) {
            if (ev.name !== 'PROVIDER') continue
            for (const p of ev.providers) {
              const id = p.id.toString()
              const prev = found.get(id)
              found.set(id, {
                peerId: id,
                multiaddrs: [...new Set([...(prev?.multiaddrs ?? []), ...p.multiaddrs.map((m) => m.toString())])],
                dhts: [...new Set([...(prev?.dhts ?? []), name])]
              })
            }
            if (found.size >= limit) { stop.abort(); return }
          }
        } catch (e) {
          // running out of time, or stopped once enough were found, ends a search normally
          if (!stop.signal.aborted) throw e
        }
      }
      try {
        await raceAbort(Promise.all(names.map(ask)), stop.signal).catch((e: unknown) => {
          if (!stop.signal.aborted) throw new RbtError(ErrorCode.PEER_UNREACHABLE, `Kubo DHT findProviders ${cid.toString()} failed: ${errorMessage(e)}`, { cause: e })
        })
      } finally {
        d.signal.removeEventListener('abort', abort)
        d.clear()
        stop.abort()
      }
      return [...found.values()].slice(0, limit)
    }
  }
}
