/**
 * rbtnode (-kubo) against real Kubo daemons configured as reference nodes configure theirs
 * (test/helpers/kubo.ts), Kubo's own commands on the other side: the layers of stage 1 of
 * docs/interop.md below the block exchange. Two namespaces: one where every peer is on loopback
 * (Kubo's WAN DHT stays empty, everything goes to its LAN DHT), one where every peer has an
 * address the DHTs take for public (both of Kubo's tables fill; provides go to WAN).
 */
import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { ApiError } from '../../src/client/index.js'
import { runCli } from '../helpers/cli.js'
import { testPng } from '../helpers/identity.js'
import { KuboDaemon, addPublicAddress, kuboSubscribe, requireKubo } from '../helpers/kubo.js'
import { createNetns, type Netns } from '../helpers/netns.js'
import { NodeProcess } from '../helpers/node-process.js'
import { waitFor } from '../helpers/wait.js'

const SWARM_KEY = fileURLToPath(new URL('../../../swarm-keys/swarm.key', import.meta.url))
/** a PeerMap as a reference node published it (test/fixtures/go-vectors.json, "did announcement") */
const REFERENCE_PEER_MAP = '{"peer_id":"12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq","did":"bafybmifan7xqoc3yz626ztk7icw3zcu7rxm3te76r5n6plyl2ubnmkexay","did_type":4,"signature":"MEQCIHA4Uh8TH8ylqf4xNPX2JN231YaZGRUvA4bI7rbZmrP9AiAummK+omANhi1T7WBDmg/GKT+prGnHMAgH5/1gJ4FZjg==","time":"2026-11-26 12:24:40.469125113 +0000 UTC m=+0.238827904"}'

async function randomCid (): Promise<CID> {
  return CID.createV1(raw.code, await sha256.digest(randomBytes(64)))
}

async function rbtPeers (node: NodeProcess): Promise<Array<{ peer_id: string, protocols: string[], encryption: string | null, muxer: string | null }>> {
  return (await node.client.call('p2pPeers')).result ?? []
}

async function rbtProviders (node: NodeProcess, cid: string, dht?: 'wan' | 'lan'): Promise<string[]> {
  const r = await node.client.call('p2pProviders', { query: { cid, ...(dht !== undefined ? { dht } : {}), timeout_ms: 5000 } })
  return (r.result?.providers ?? []).map((p) => p.peer_id)
}

/** `ipfs add` of fresh bytes, then `ipfs dht provide`: the CID Kubo announced. */
async function kuboProvides (k: KuboDaemon, dir: string): Promise<string> {
  const file = join(dir, `data-${randomBytes(4).toString('hex')}`)
  writeFileSync(file, randomBytes(2048))
  const cid = (await k.ipfs(['add', '-Q', '--cid-version', '1', file])).trim()
  await k.ipfs(['dht', 'provide', cid], { timeoutMs: 60_000 })
  return cid
}

describe('e2e: Kubo interop, stage 1 (pnet, Noise, yamux, identify, ping, both DHTs, peer_service)', function () {
  this.timeout(240_000)
  let work = ''
  const nss: Netns[] = []
  const kubos: KuboDaemon[] = []
  const nodes: NodeProcess[] = []

  before(async function () {
    await requireKubo(this)
    work = mkdtempSync(join(tmpdir(), 'rbt-kubo-e2e-'))
  })

  after(async () => {
    await Promise.all(nodes.map(async (n) => { await n.dispose().catch(() => {}) }))
    await Promise.all(kubos.map(async (k) => { await k.stop().catch(() => {}) }))
    for (const ns of nss) await ns.dispose()
    if (work !== '') rmSync(work, { recursive: true, force: true })
  })

  async function kubo (ns: Netns, opts: { host?: string, swarmKey?: string } = {}): Promise<KuboDaemon> {
    const k = new KuboDaemon({ netns: ns, swarmKey: opts.swarmKey ?? SWARM_KEY, ...(opts.host !== undefined ? { host: opts.host } : {}) })
    kubos.push(k)
    return await k.start()
  }

  async function rbtnode (ns: Netns, host?: string): Promise<NodeProcess> {
    const n = new NodeProcess({ netns: ns, extraArgs: ['-mdns=false', '-kubo'], ...(host !== undefined ? { swarmHost: host } : {}), startTimeoutMs: 60_000 })
    nodes.push(n)
    return await n.start()
  }

  describe('on loopback (Kubo\'s LAN DHT)', () => {
    let ns: Netns
    let r: NodeProcess
    let k1: KuboDaemon
    let k2: KuboDaemon

    before(async () => {
      ns = await createNetns('kubo-lan')
      nss.push(ns)
      ;[r, k1, k2] = await Promise.all([rbtnode(ns), kubo(ns), kubo(ns)])
    })

    it('rbtnode dials Kubo: both list the connection, negotiated as Noise and yamux, and identify tells each the other\'s DHTs', async () => {
      const res = await r.client.call('p2pConnect', { body: { addr: k1.multiaddr } })
      expect(res.result?.peer_id).to.equal(k1.peerId)
      await waitFor(async () => (await k1.swarmPeers()).includes(r.peerId), { timeoutMs: 15_000, what: 'Kubo to list rbtnode' })
      const peer = await waitFor(async () => (await rbtPeers(r)).find((p) => p.peer_id === k1.peerId && p.protocols.length > 0), { timeoutMs: 15_000, what: 'identify of Kubo' })
      expect(peer.encryption).to.equal('/noise')
      expect(peer.muxer).to.equal('/yamux/1.0.0')
      expect(peer.protocols).to.include.members(['/ipfs/kad/1.0.0', '/ipfs/lan/kad/1.0.0', '/ipfs/ping/1.0.0', '/ipfs/id/1.0.0'])
      expect(peer.protocols.some((p) => p.startsWith('/meshsub/'))).to.equal(true)
      // and Kubo learned ours
      const id = JSON.parse(await k1.ipfs(['id', r.peerId])) as { Protocols: string[] }
      expect(id.Protocols).to.include.members(['/ipfs/kad/1.0.0', '/ipfs/lan/kad/1.0.0', '/ipfs/ping/1.0.0', '/ipfs/id/1.0.0'])
    })

    it('Kubo dials rbtnode (ipfs swarm connect): rbtnode lists it', async () => {
      const out = await k2.ipfs(['swarm', 'connect', r.multiaddr])
      expect(out).to.contain('success')
      await waitFor(async () => (await rbtPeers(r)).some((p) => p.peer_id === k2.peerId), { timeoutMs: 15_000, what: 'rbtnode to list Kubo' })
    })

    it('a Kubo daemon with another swarm key is refused both ways', async () => {
      const otherKey = join(work, 'other.key')
      writeFileSync(otherKey, `/key/swarm/psk/1.0.0/\n/base16/\n${randomBytes(32).toString('hex')}\n`)
      const bad = await kubo(ns, { swarmKey: otherKey })
      let refused: unknown
      try {
        await r.client.call('p2pConnect', { body: { addr: bad.multiaddr } })
      } catch (e) { refused = e }
      expect(refused).to.be.instanceOf(ApiError)
      let kuboRefused: unknown
      try {
        await bad.ipfs(['swarm', 'connect', r.multiaddr], { timeoutMs: 30_000 })
      } catch (e) { kuboRefused = e }
      expect(kuboRefused, 'ipfs swarm connect with the wrong key').to.be.instanceOf(Error)
      expect((await rbtPeers(r)).map((p) => p.peer_id)).to.not.include(bad.peerId)
      expect(await bad.swarmPeers()).to.not.include(r.peerId)
      await bad.stop()
    })

    it('ipfs swarm peers and ipfs ping see rbtnode', async () => {
      expect(await k1.swarmPeers()).to.include(r.peerId)
      const out = await k1.ipfs(['ping', '-n', '3', r.peerId])
      expect(out).to.match(/Average latency: [\d.]+m?s/)
    })

    it('LAN: ipfs dht findprovs lists rbtnode after rbtnode provides (WAN table empty on loopback, so LAN)', async () => {
      const cid = (await randomCid()).toString()
      const res = await r.client.call('p2pProvide', { body: { cid } })
      expect(res.result?.dht).to.equal('lan')
      const out = await waitFor(async () => {
        const o = await k2.ipfs(['dht', 'findprovs', '-n', '1', cid], { timeoutMs: 30_000 })
        return o.includes(r.peerId) ? o : undefined
      }, { timeoutMs: 60_000, what: 'Kubo to find rbtnode as provider' })
      expect(out.trim().split('\n')).to.include(r.peerId)
    })

    it('LAN: rbtnode finds the provider records Kubo put', async () => {
      const cid = await kuboProvides(k1, work)
      const found = await waitFor(async () => { const p = await rbtProviders(r, cid, 'lan'); return p.includes(k1.peerId) ? p : undefined }, { timeoutMs: 60_000, what: 'rbtnode to find Kubo as provider on the LAN DHT' })
      expect(found).to.include(k1.peerId)
    })

    it('ipfs dht findpeer: Kubo finds rbtnode, and finds another Kubo through rbtnode\'s DHT', async () => {
      const own = await k2.ipfs(['dht', 'findpeer', r.peerId])
      expect(own).to.contain(`/tcp/${r.swarmPort}`)
      const other = await k2.ipfs(['dht', 'findpeer', k1.peerId], { timeoutMs: 60_000 })
      expect(other).to.contain(`/tcp/${k1.swarmPort}`)
    })

    it('ipfs pubsub pub peer_service reaches rbtnode, which reads the reference\'s PeerMap', async () => {
      await waitFor(async () => (await k1.ipfs(['pubsub', 'peers', 'peer_service'])).includes(r.peerId), { timeoutMs: 30_000, what: 'Kubo to see rbtnode on peer_service' })
      const file = join(work, 'peer-map.json')
      writeFileSync(file, REFERENCE_PEER_MAP)
      const heard = await waitFor(async () => {
        await k1.ipfs(['pubsub', 'pub', 'peer_service', file])
        const list = (await r.client.call('p2pPeerService')).result ?? []
        return list.find((m) => m.did === 'bafybmifan7xqoc3yz626ztk7icw3zcu7rxm3te76r5n6plyl2ubnmkexay')
      }, { timeoutMs: 30_000, intervalMs: 1000, what: 'rbtnode to hear the PeerMap' })
      expect(heard.peer_id).to.equal('12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq')
      expect(heard.did_type).to.equal(4)
      expect(heard.from).to.equal(k1.peerId)
    })

    it('rbtnode\'s PeerMap of a registered DID reaches ipfs pubsub sub, in the reference\'s JSON', async () => {
      const sub = kuboSubscribe(k2, 'peer_service')
      try {
        await waitFor(async () => (await k2.ipfs(['pubsub', 'peers', 'peer_service'])).includes(r.peerId), { timeoutMs: 30_000, what: 'Kubo to see rbtnode on peer_service' })
        writeFileSync(join(work, 'image.png'), testPng(256, 256, 52))
        const created = await runCli(['createdid', ...r.cliArgs, '-didType', '0'], { cwd: work, netns: ns })
        expect(created.code, created.stderr).to.equal(0)
        const did = /DID (bafybmi[a-z2-7]{52}) created/.exec(created.stderr)![1]!
        const reg = await runCli(['registerdid', ...r.cliArgs, '-did', did, '-privPWD', 'mypassword'], { netns: ns })
        expect(reg.code, reg.stderr).to.equal(0)
        const msg = await waitFor(() => sub.messages.find((m) => new TextDecoder().decode(m.data).includes(did)), { timeoutMs: 30_000, what: 'the PeerMap at ipfs pubsub sub' })
        expect(msg.from).to.equal(r.peerId)
        const text = new TextDecoder().decode(msg.data)
        expect(Object.keys(JSON.parse(text) as object)).to.deep.equal(['peer_id', 'did', 'did_type', 'signature', 'time'])
        const map = JSON.parse(text) as { peer_id: string, did: string, did_type: number, signature: string }
        expect(map).to.include({ peer_id: r.peerId, did, did_type: 0 })
        expect(map.signature).to.match(/^[A-Za-z0-9+/]+=*$/)
      } finally {
        sub.stop()
      }
    })
  })

  describe('with public addresses (Kubo\'s WAN DHT)', () => {
    const PUBLIC_IP = '11.0.0.1'
    let ns: Netns
    let r: NodeProcess
    let k1: KuboDaemon
    let k2: KuboDaemon

    before(async () => {
      ns = await createNetns('kubo-wan')
      nss.push(ns)
      await addPublicAddress(ns, PUBLIC_IP)
      ;[r, k1, k2] = await Promise.all([rbtnode(ns, PUBLIC_IP), kubo(ns, { host: PUBLIC_IP }), kubo(ns, { host: PUBLIC_IP })])
      await k1.ipfs(['swarm', 'connect', r.multiaddr])
      await r.client.call('p2pConnect', { body: { addr: k2.multiaddr } })
    })

    it('WAN: ipfs dht findprovs lists rbtnode after rbtnode provides (its WAN table holds Kubo, so WAN)', async () => {
      // Kubo keeps rbtnode in its WAN table: a public address announced, and its own id answered on /ipfs/kad/1.0.0
      await waitFor(async () => (await k1.ipfs(['stats', 'dht', 'wan'])).includes(r.peerId), { timeoutMs: 30_000, what: 'rbtnode in Kubo\'s WAN table' })
      const cid = (await randomCid()).toString()
      const res = await waitFor(async () => (await r.client.call('p2pProvide', { body: { cid } })).result, { timeoutMs: 30_000, what: 'a provide once the WAN table has peers' })
      expect(res.dht).to.equal('wan')
      await waitFor(async () => (await k1.ipfs(['dht', 'findprovs', '-n', '1', cid], { timeoutMs: 30_000 })).includes(r.peerId), { timeoutMs: 60_000, what: 'Kubo to find rbtnode as provider' })
    })

    it('WAN: rbtnode finds the provider records Kubo put on its WAN DHT', async () => {
      const cid = await kuboProvides(k2, work)
      const found = await waitFor(async () => { const p = await rbtProviders(r, cid, 'wan'); return p.includes(k2.peerId) ? p : undefined }, { timeoutMs: 60_000, what: 'rbtnode to find Kubo as provider on the WAN DHT' })
      expect(found).to.include(k2.peerId)
    })
  })
})
