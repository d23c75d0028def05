import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { closestQuery, compareDistance, kadKey, kadPeerKey, type QueryPeer } from '../../src/p2p/closest-query.js'

/**
 * The walk alone, over a table of who-knows-whom: each peer answers with the k peers it knows
 * closest to the key, as the record protocol's handlers do.
 */
describe('p2p/closest-query', () => {
  let ids: string[]
  const key = new TextEncoder().encode('/rbt/spent/QmTest')
  const target = kadKey(key)
  const byDistance = (list: string[]): string[] => [...list].sort((a, b) => compareDistance(target, kadPeerKey(a), kadPeerKey(b)))

  before(async () => {
    ids = []
    for (let i = 0; i < 40; i++) ids.push(peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString())
  })

  const peer = (peerId: string): QueryPeer => ({ peerId, multiaddrs: [`/ip4/127.0.0.1/tcp/${4000 + ids.indexOf(peerId)}`] })
  /**
   * Kademlia buckets: every peer knows at most `size` peers at each distance range (leading bit of
   * the XOR). With 40 peers and `size` 10 only the farthest bucket (half the network) is cut, so a
   * peer in the key's half knows that whole half: a walk that reaches it learns the k closest.
   */
  const bucketsOf = (p: string, size: number): string[] => {
    const me = kadPeerKey(p)
    const buckets = new Map<number, string[]>()
    for (const q of ids) {
      if (q === p) continue
      const other = kadPeerKey(q)
      let bit = 0
      for (let i = 0; i < me.length; i++) {
        const x = me[i]! ^ other[i]!
        if (x !== 0) { bit = i * 8 + Math.clz32(x) - 24; break }
      }
      const b = buckets.get(bit) ?? []
      if (b.length < size) b.push(q)
      buckets.set(bit, b)
    }
    return [...buckets.values()].flat()
  }
  const closestOf = (known: string[], k: number): QueryPeer[] => byDistance(known).slice(0, k).map(peer)

  it('orders ids by XOR distance to the key', () => {
    const sorted = byDistance(ids)
    for (let i = 1; i < sorted.length; i++) expect(compareDistance(target, kadPeerKey(sorted[i - 1]!), kadPeerKey(sorted[i]!))).to.be.below(0)
    expect(compareDistance(target, target, target)).to.equal(0)
  })

  it('walks from far peers to the k closest of the network and asks each of them', async () => {
    const self = ids[0]!
    const k = 5
    // start from the farthest peers only
    const start = byDistance(ids.slice(1)).slice(-3).map(peer)
    const asked: string[] = []
    const res = await closestQuery<string>({
      target, start, self, k, concurrency: 3,
      ask: async (p) => { asked.push(p.peerId); return { closer: closestOf(bucketsOf(p.peerId, 2 * k), k) } }
    })
    const closest = byDistance(ids.slice(1)).slice(0, k)
    for (const c of closest) expect(res.answered, 'every one of the k closest answered').to.include(c)
    expect(asked).to.not.include(self)
    expect(new Set(asked).size).to.equal(asked.length)
    expect(res.values).to.deep.equal([])
    expect(asked.length, 'the walk does not flood the network').to.be.below(ids.length - 1)
  })

  it('ends at the first accepted value; a value it refuses does not end the walk', async () => {
    const sorted = byDistance(ids.slice(1))
    const forger = sorted[0]!
    const holder = sorted[3]!
    const asked: string[] = []
    const res = await closestQuery<string>({
      target, start: sorted.map(peer), self: ids[0]!, k: 20, concurrency: 1,
      ask: async (p) => {
        asked.push(p.peerId)
        return p.peerId === forger ? { value: 'forged', closer: [] } : p.peerId === holder ? { value: 'real', closer: [] } : { closer: [] }
      },
      accept: async (v) => v === 'real'
    })
    expect(res.values).to.deep.equal([{ value: 'real', from: holder }])
    expect(asked).to.deep.equal(sorted.slice(0, 4))
  })

  it('counts failing peers and goes on to the next closest instead', async () => {
    const sorted = byDistance(ids.slice(1))
    const down = new Set(sorted.slice(0, 2))
    const res = await closestQuery<string>({
      target, start: sorted.slice(0, 6).map(peer), self: ids[0]!, k: 3, concurrency: 2,
      ask: async (p) => {
        if (down.has(p.peerId)) throw new Error('unreachable')
        return { closer: closestOf(sorted.filter((q) => q !== p.peerId), 3) }
      }
    })
    expect(res.failed.sort()).to.deep.equal([...down].sort())
    expect(res.answered.slice(0, 3)).to.deep.equal(sorted.slice(2, 5))
  })

  it('stops when its signal aborts, with the requests in flight told to stop', async () => {
    const ac = new AbortController()
    let aborted = 0
    const started = Date.now()
    setTimeout(() => { ac.abort() }, 50)
    const res = await closestQuery<string>({
      target, start: ids.slice(1, 5).map(peer), self: ids[0]!, k: 4, concurrency: 4, signal: ac.signal,
      ask: async (_p, signal) => await new Promise((_resolve, reject) => { signal.addEventListener('abort', () => { aborted++; reject(new Error('aborted')) }) })
    })
    expect(Date.now() - started).to.be.below(5000)
    expect(res.answered).to.deep.equal([])
    expect(aborted).to.equal(4)
  })

  it('skips malformed peer ids in answers and never asks itself', async () => {
    const self = ids[0]!
    const asked: string[] = []
    const res = await closestQuery<string>({
      target, start: [peer(ids[1]!)], self, k: 5, concurrency: 2,
      ask: async (p) => {
        asked.push(p.peerId)
        return p.peerId === ids[1] ? { closer: [{ peerId: 'not-a-peer', multiaddrs: [] }, peer(self), peer(ids[2]!)] } : { closer: [] }
      }
    })
    expect(asked.sort()).to.deep.equal([ids[1]!, ids[2]!].sort())
    expect(res.failed).to.deep.equal([])
  })
})
