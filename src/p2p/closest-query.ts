/**
 * A Kademlia walk run over the caller's own request function: ask the peers closest to a key,
 * learn closer peers from their answers, and stop once the `k` closest peers seen have all
 * answered (or failed), or once an answer is accepted. The DHT library's own walk opens a
 * stream per request with full protocol negotiation; this one lets the caller send its
 * requests over the rpc channel it already holds to each peer (docs/protocol.md, "Spent-marker
 * records").
 */
import { createHash } from 'node:crypto'
import { peerIdFromString } from '@libp2p/peer-id'

export interface QueryPeer { peerId: string, multiaddrs: string[] }

/** Kademlia id of a key: SHA-256 of its bytes (as the DHT library computes it). */
export function kadKey (key: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(key).digest())
}

const peerKeys = new Map<string, Uint8Array>()
/** Kademlia id of a peer: SHA-256 of its id's multihash bytes. Throws on a malformed id. */
export function kadPeerKey (peerId: string): Uint8Array {
  let k = peerKeys.get(peerId)
  if (k === undefined) {
    k = kadKey(peerIdFromString(peerId).toMultihash().bytes)
    if (peerKeys.size >= 10_000) peerKeys.clear()
    peerKeys.set(peerId, k)
  }
  return k
}

/** Compares the XOR distances of `a` and `b` to `target`: negative when `a` is closer. */
export function compareDistance (target: Uint8Array, a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < target.length; i++) {
    const da = (a[i] ?? 0) ^ (target[i] ?? 0)
    const db = (b[i] ?? 0) ^ (target[i] ?? 0)
    if (da !== db) return da - db
  }
  return 0
}

export interface ClosestQueryOptions<T> {
  /** Kademlia id of the key (`kadKey`) */
  target: Uint8Array
  /** peers to start from, usually the closest ones of the local routing table */
  start: readonly QueryPeer[]
  /** this node: never asked */
  self: string
  /** the walk ends when this many closest peers seen have answered or failed (Kademlia's k) */
  k: number
  /** requests in flight at once */
  concurrency: number
  ask: (peer: QueryPeer, signal: AbortSignal) => Promise<{ value?: T, closer: readonly QueryPeer[] }>
  /** an answer this accepts ends the walk at once (a record found); without it, every value is collected */
  accept?: (value: T, from: string) => boolean | Promise<boolean>
  signal?: AbortSignal
}

export interface ClosestQueryResult<T> {
  /** the accepted value, or every value collected when `accept` was not given */
  values: Array<{ value: T, from: string }>
  /** peers that answered, closest first */
  answered: string[]
  /** peers that failed */
  failed: string[]
  /** peers learned but never asked (farther than the k closest) */
  unasked: string[]
}

interface Candidate { peer: QueryPeer, key: Uint8Array, state: 'new' | 'asking' | 'answered' | 'failed' }

/** Runs the walk; never throws for a failing peer (it is counted in `failed`). Ends early on `signal`. */
export async function closestQuery<T> (opts: ClosestQueryOptions<T>): Promise<ClosestQueryResult<T>> {
  const candidates: Candidate[] = []
  const seen = new Set<string>([opts.self])
  const add = (p: QueryPeer): void => {
    if (seen.has(p.peerId)) return
    let key: Uint8Array
    try { key = kadPeerKey(p.peerId) } catch { return }
    seen.add(p.peerId)
    candidates.push({ peer: p, key, state: 'new' })
  }
  for (const p of opts.start) add(p)
  const byDistance = (): void => { candidates.sort((a, b) => compareDistance(opts.target, a.key, b.key)) }
  byDistance()

  const values: Array<{ value: T, from: string }> = []
  const stop = new AbortController()
  const onAbort = (): void => { stop.abort(opts.signal?.reason) }
  opts.signal?.addEventListener('abort', onAbort, { once: true })
  if (opts.signal?.aborted === true) stop.abort(opts.signal.reason)
  let inflight = 0
  let done = false

  await new Promise<void>((resolve) => {
    const finish = (): void => {
      if (done) return
      done = true
      stop.abort(new Error('query finished'))
      resolve()
    }
    stop.signal.addEventListener('abort', finish, { once: true })
    const pump = (): void => {
      if (done) return
      // the k closest peers that have not failed: the walk is over when none is left to ask
      const live = candidates.filter((c) => c.state !== 'failed').slice(0, opts.k)
      const next = live.filter((c) => c.state === 'new')
      if (next.length === 0 && inflight === 0) { finish(); return }
      for (const c of next) {
        if (inflight >= opts.concurrency) break
        c.state = 'asking'
        inflight++
        void opts.ask(c.peer, stop.signal).then(async (res) => {
          if (done) return
          c.state = 'answered'
          if (res.value !== undefined) {
            if (opts.accept === undefined) values.push({ value: res.value, from: c.peer.peerId })
            else if (await opts.accept(res.value, c.peer.peerId)) {
              values.push({ value: res.value, from: c.peer.peerId })
              finish()
              return
            }
          }
          for (const p of res.closer.slice(0, opts.k)) add(p)
          byDistance()
        }, () => { c.state = 'failed' }).finally(() => { inflight--; pump() })
      }
    }
    pump()
  })
  opts.signal?.removeEventListener('abort', onAbort)
  return {
    values,
    answered: candidates.filter((c) => c.state === 'answered').map((c) => c.peer.peerId),
    failed: candidates.filter((c) => c.state === 'failed').map((c) => c.peer.peerId),
    unasked: candidates.filter((c) => c.state === 'new').map((c) => c.peer.peerId)
  }
}
