import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { P2pHost } from '../../../src/p2p/host.js'
import { Bitswap, registerBitswap } from '../../../src/p2p/kubo/bitswap.js'
import { FsBlockstore, cidFor, RAW, SHA2_256 } from '../../../src/p2p/kubo/blockstore.js'
import { importFile, importFolder } from '../../../src/p2p/kubo/unixfs-import.js'
import { getTree, readWhole } from '../../../src/p2p/kubo/unixfs-export.js'
import { PRESENCE_DONT_HAVE, WANT_BLOCK, emptyMessage } from '../../../src/p2p/kubo/bitswap-message.js'
import { connect, startHosts, stopAll } from '../helpers.js'
import { readFileSync } from 'node:fs'

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

/** Host 1's bitswap again, with a routing (the suite's own instance is stopped first). */
async function registerBitswapWith (host: P2pHost, store: FsBlockstore, routing: NonNullable<import('../../../src/p2p/kubo/bitswap.js').BitswapOptions['routing']>): Promise<Bitswap> {
  return await registerBitswap(host, store, { routing })
}

describe('p2p/kubo/bitswap: between rbtnode hosts', function () {
  this.timeout(60_000)
  let hosts: P2pHost[] = []
  let stores: FsBlockstore[] = []
  let swaps: Bitswap[] = []
  let dir: string

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbt-bitswap-'))
    hosts = await startHosts(3)
    stores = hosts.map((_, i) => new FsBlockstore(join(dir, `n${i}`)))
    swaps = await Promise.all(hosts.map(async (h, i) => await registerBitswap(h, stores[i])))
  })

  afterEach(async () => {
    for (const s of swaps) await s.stop()
    await stopAll(hosts)
    rmSync(dir, { recursive: true, force: true })
  })

  it('fetches a file of many blocks from the peer holding it, checked and stored', async () => {
    await connect(hosts[0], hosts[1])
    const bytes = randomBytes(20 * 262_144 + 11)
    const { cid } = await importFile(stores[0], bytes, 'v0')
    const got = await readWhole(swaps[1], cid)
    expect(sha(got)).to.equal(sha(bytes))
    expect(await stores[1].has(cid)).to.equal(true)
    expect(swaps[1].stats.blocksReceived).to.equal(22)
    expect(swaps[1].pendingWants).to.equal(0)
  })

  it('finds the one peer of several that holds a folder', async () => {
    await connect(hosts[2], hosts[0])
    await connect(hosts[2], hosts[1])
    const files = { 'did.png': randomBytes(300_000), 'pubKey.pem': Buffer.from('k') }
    const { cid } = await importFolder(stores[1], files, 'v1-sha3')
    await getTree(swaps[2], cid, join(dir, 'out'))
    for (const [n, b] of Object.entries(files)) expect(sha(readFileSync(join(dir, 'out', n)))).to.equal(sha(b))
  })

  it('a block that arrives later reaches a peer still waiting for it', async () => {
    await connect(hosts[0], hosts[1])
    const bytes = randomBytes(1000)
    const cid = cidFor(1, RAW, SHA2_256, bytes)
    const waiting = swaps[1].get(cid, { timeoutMs: 20_000 })
    await new Promise((resolve) => setTimeout(resolve, 200))
    await stores[0].put(cid, bytes)
    expect(sha(await waiting)).to.equal(sha(bytes))
  })

  it('gives up with TIMEOUT when nobody has the block, and withdraws the want', async () => {
    await connect(hosts[0], hosts[1])
    const cid = cidFor(1, RAW, SHA2_256, randomBytes(10))
    let err: unknown
    try { await swaps[1].get(cid, { timeoutMs: 500 }) } catch (e) { err = e }
    expect(err).to.have.property('code', 'TIMEOUT')
    expect(swaps[1].pendingWants).to.equal(0)
  })

  it('a block that does not hash to what was wanted is dropped', async () => {
    const cid = cidFor(1, RAW, SHA2_256, Buffer.from('wanted'))
    const waiting = swaps[1].get(cid, { timeoutMs: 800, peers: [] })
    const m = emptyMessage()
    m.payload.push({ prefix: Uint8Array.of(1, RAW, 0x12, 32), data: Buffer.from('not wanted') })
    m.blockPresences.push({ cid, type: PRESENCE_DONT_HAVE })
    await swaps[1].receive(hosts[0].peerId, m)
    let err: unknown
    try { await waiting } catch (e) { err = e }
    expect(err).to.have.property('code', 'TIMEOUT')
    expect(await stores[1].has(cid)).to.equal(false)
    expect(swaps[1].stats.duplicateBlocks).to.equal(1)
  })

  it('a block no connected peer has is asked of the providers routing names, dialled first', async () => {
    const bytes = randomBytes(300_000)
    const { cid } = await importFile(stores[0], bytes, 'v0')
    await connect(hosts[1], hosts[2]) // a connected peer without the file
    const searched: string[] = []
    const routing = {
      findProviders: async (c: import('multiformats/cid').CID) => {
        searched.push(c.toString())
        return [{ peerId: hosts[0].peerId, multiaddrs: hosts[0].multiaddrs().map((a) => a.replace(/\/p2p\/.*$/, '')) }]
      }
    }
    await swaps[1].stop()
    const withRouting = await registerBitswapWith(hosts[1], stores[1], routing)
    try {
      expect(hosts[1].isConnected(hosts[0].peerId)).to.equal(false)
      const got = await readWhole(withRouting, cid)
      expect(sha(got)).to.equal(sha(bytes))
      expect(searched[0]).to.equal(cid.toString())
      expect(hosts[1].isConnected(hosts[0].peerId)).to.equal(true)
    } finally {
      await withRouting.stop()
    }
  })

  it('a cancelled want is not served', async () => {
    const bytes = randomBytes(100)
    const cid = cidFor(1, RAW, SHA2_256, bytes)
    const m = emptyMessage()
    m.wantlist.entries.push({ cid, priority: 1, cancel: false, wantType: WANT_BLOCK, sendDontHave: false })
    await swaps[0].receive(hosts[1].peerId, m)
    expect(swaps[0].peerWants(hosts[1].peerId, cid, WANT_BLOCK)).to.equal(true)
    m.wantlist.entries[0].cancel = true
    await swaps[0].receive(hosts[1].peerId, m)
    expect(swaps[0].peerWants(hosts[1].peerId, cid, WANT_BLOCK)).to.equal(false)
  })
})
