import { expect } from 'chai'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { PeerId } from '@libp2p/interface'
import type { KadDHT } from '@libp2p/kad-dht'
import { multiaddr } from '@multiformats/multiaddr'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { createKuboRouting } from '../../../src/p2p/kubo/kubo-routing.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'

/** A table with `size` peers that records provides and names `providers` on lookups. */
function fakeDht (size: number, providers: Array<{ id: PeerId, addr: string }> = [], opts: { hang?: boolean } = {}): KadDHT & { provided: string[] } {
  const provided: string[] = []
  return {
    provided,
    routingTable: { size },
    async * provide (cid: CID) { provided.push(cid.toString()) },
    async * findProviders (_cid: CID, o: { signal?: AbortSignal }) {
      for (const p of providers) yield { name: 'PROVIDER', providers: [{ id: p.id, multiaddrs: [multiaddr(p.addr)] }] }
      if (opts.hang === true) await new Promise((resolve) => { o.signal?.addEventListener('abort', resolve) })
    }
  } as unknown as KadDHT & { provided: string[] }
}

async function peer (): Promise<PeerId> {
  return peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
}

describe('p2p/kubo/kubo-routing: Kubo\'s dual-DHT rule', () => {
  let cid: CID
  before(async () => { cid = CID.createV1(raw.code, await sha256.digest(new Uint8Array([1, 2, 3]))) })

  it('provides on WAN when its table has peers, else on LAN, or on the table named', async () => {
    const wan = fakeDht(2)
    const lan = fakeDht(1)
    const r = createKuboRouting({ wan, lan })
    expect(await r.provide(cid, { timeoutMs: 1000 })).to.equal('wan')
    expect(await r.provide(cid, { dht: 'lan', timeoutMs: 1000 })).to.equal('lan')
    const onlyLan = createKuboRouting({ wan: fakeDht(0), lan })
    expect(await onlyLan.provide(cid, { timeoutMs: 1000 })).to.equal('lan')
    expect(wan.provided).to.have.length(1)
    expect(lan.provided).to.have.length(2)
  })

  it('refuses a provide to a table without peers', async () => {
    const r = createKuboRouting({ wan: fakeDht(0), lan: fakeDht(0) })
    try {
      await r.provide(cid, { timeoutMs: 1000 })
      expect.fail('expected a refusal')
    } catch (e) {
      expect((e as RbtError).code).to.equal(ErrorCode.PEER_UNREACHABLE)
    }
  })

  it('asks both tables and merges what they name, each provider with the tables that named it', async () => {
    const [a, b] = [await peer(), await peer()]
    const r = createKuboRouting({
      wan: fakeDht(1, [{ id: a, addr: '/ip4/11.0.0.1/tcp/1' }]),
      lan: fakeDht(1, [{ id: a, addr: '/ip4/127.0.0.1/tcp/1' }, { id: b, addr: '/ip4/127.0.0.1/tcp/2' }])
    })
    const found = await r.findProviders(cid, { timeoutMs: 2000 })
    const byId = new Map(found.map((p) => [p.peerId, p]))
    expect(byId.get(a.toString())?.dhts.sort()).to.deep.equal(['lan', 'wan'])
    expect(byId.get(a.toString())?.multiaddrs.sort()).to.deep.equal(['/ip4/11.0.0.1/tcp/1', '/ip4/127.0.0.1/tcp/1'])
    expect(byId.get(b.toString())?.dhts).to.deep.equal(['lan'])
    const wanOnly = await r.findProviders(cid, { dht: 'wan', timeoutMs: 2000 })
    expect(wanOnly.map((p) => p.peerId)).to.deep.equal([a.toString()])
  })

  it('returns what it found when the deadline passes on a search that does not end', async () => {
    const a = await peer()
    const r = createKuboRouting({ wan: fakeDht(1, [{ id: a, addr: '/ip4/11.0.0.1/tcp/1' }], { hang: true }), lan: fakeDht(1, [], { hang: true }) })
    const t0 = Date.now()
    const found = await r.findProviders(cid, { timeoutMs: 300 })
    expect(Date.now() - t0).to.be.lessThan(2000)
    expect(found.map((p) => p.peerId)).to.deep.equal([a.toString()])
  })
})
