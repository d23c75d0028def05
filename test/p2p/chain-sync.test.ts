import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { P2pHost } from '../../src/p2p/host.js'
import { createRpc, type Rpc } from '../../src/p2p/rpc.js'
import { LevelStore } from '../../src/storage/level-store.js'
import { auditLedger, TokenLedger, type StoredBlockInput } from '../../src/storage/token-ledger.js'
import { levelTokenRepositories, type TokenRepositories } from '../../src/storage/token-repositories.js'
import { TokenStatus } from '../../src/storage/token-records.js'
import { decodeBlockEnvelope, encodeBlockEnvelope, formatBlockId, setSignature, sha3Hex, type Block } from '../../src/tokenchain/index.js'
import { blockRecordOf } from '../../src/tokens/token-service.js'
import { ErrorCode } from '../../src/util/errors.js'
import { silentLogger } from '../../src/util/logger.js'
import { FN_PLEDGES, SyncService, type SyncNetwork } from '../../src/node/sync/sync-service.js'
import { createSyncNetwork, syncRpcHandlers, type SyncMethods } from '../../src/node/sync/sync-network.js'
import { buildTestTokenChain, KeyRing, type TestChain } from '../unit/tokenchain/fixtures.js'
import { connect, expectRbtError, startHosts, stopAll, waitFor } from './helpers.js'

interface Side {
  dir: string
  store: LevelStore
  ledger: TokenLedger
  repos: TokenRepositories
  sync: SyncService
  rpc?: Rpc<SyncMethods>
  net: SyncNetwork
}

/** A node's storage and sync service; `over` reuses another side's network (same host, a fresh data dir). */
async function side (host: P2pHost, ring: KeyRing, fullnode: boolean, over?: Side, localDids: readonly string[] = []): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-sync-'))
  const store = new LevelStore(join(dir, 'db'))
  await store.open()
  const ledger = new TokenLedger(store, sha3Hex)
  const repos = levelTokenRepositories(store)
  const s = {} as Side
  const sync = new SyncService({ ledger, repos, verifier: ring.verifier, fullnode, isLocalDid: async (d) => localDids.includes(d), network: () => s.net, pledges: store.collection(FN_PLEDGES), log: silentLogger })
  if (over !== undefined) {
    Object.assign(s, { dir, store, ledger, repos, sync, net: over.net })
    return s
  }
  const rpc = createRpc<SyncMethods>({ host, handlers: syncRpcHandlers(() => sync), maxFrameBytes: 4 * 1024 * 1024 })
  await rpc.start()
  const net = createSyncNetwork(host, rpc, { testNet: true, configured: () => [] })
  Object.assign(s, { dir, store, ledger, repos, sync, rpc, net })
  return s
}

/** Stores a chain exactly as given (no validation): what a dishonest or broken peer could hold. */
async function storeUnchecked (s: Side, chain: { tokenId: string, tokenContent: string, envelopes: Uint8Array[] }): Promise<void> {
  const now = Date.now()
  const blocks: StoredBlockInput[] = chain.envelopes.map((e) => ({ record: blockRecordOf(chain.tokenId, decodeBlockEnvelope(e), now), envelope: e }))
  const last = decodeBlockEnvelope(chain.envelopes[chain.envelopes.length - 1]!)
  const n = chain.envelopes.length - 1
  await s.ledger.commit({
    tokens: [{ record: { tokenId: chain.tokenId, kind: 'rbt', tokenType: 3, value: 1000, owner: last.content.owner, status: TokenStatus.Free, latestBlockId: formatBlockId(n, last.hash), latestBlockNumber: n, createdAt: now, updatedAt: now } }],
    blocks,
    contents: { [chain.tokenId]: chain.tokenContent }
  })
}

describe('p2p: chain sync and recovery over libp2p', function () {
  this.timeout(600_000)
  const ring = new KeyRing()
  let hosts: P2pHost[] = []
  let full: Side
  let fresh: Side
  let long: TestChain

  before(async () => {
    hosts = await startHosts(2)
    await connect(hosts[0]!, hosts[1]!)
    full = await side(hosts[0]!, ring, true)
    fresh = await side(hosts[1]!, ring, false)
    long = buildTestTokenChain(ring, 999)
    await storeUnchecked(full, long)
  })

  after(async () => {
    await stopAll([full?.rpc, fresh?.rpc])
    await stopAll(hosts)
    for (const s of [full, fresh]) {
      if (s === undefined) continue
      await s.store.close()
      rmSync(s.dir, { recursive: true, force: true })
    }
  })

  it('pages a 1,000-block chain over one stream, in order, each page within 256 KiB', async () => {
    const pages: Uint8Array[][] = []
    for await (const p of fresh.net.source(hosts[0]!.peerId).chain(long.tokenId, 0)) pages.push(p)
    expect(pages.length).to.be.greaterThan(1)
    for (const p of pages) expect(p.reduce((n, b) => n + b.byteLength, 0)).to.be.at.most(256 * 1024)
    const got = pages.flat()
    expect(got).to.have.length(1000)
    got.forEach((b, i) => { expect(Buffer.from(b).equals(Buffer.from(long.envelopes[i]!)), `block ${i}`).to.equal(true) })
    // from the middle
    const tail: Uint8Array[] = []
    for await (const p of fresh.net.source(hosts[0]!.peerId).chain(long.tokenId, 990)) tail.push(...p)
    expect(tail).to.have.length(10)
  })

  it('a fullnode archives the chain (validated) and sync-transaction-chain returns all 1,000 blocks in order, paged, with exclusions', async () => {
    // the fresh side acts as a second fullnode here: archive fetches from the first one and validates every block
    const r = await fresh.sync.archive(hosts[0]!.peerId, [long.tokenId])
    expect(r.stored).to.equal(1000)
    const seen: Array<{ number: number, tx_id: string }> = []
    let cursor = ''
    let answers = 0
    for (;;) {
      const res = await fresh.sync.transactionChains({ did: long.owners[0]!, token_ids: [long.tokenId], cursor, limit: 300 })
      answers++
      for (const c of res.chains) { expect(c.length).to.equal(1000); seen.push(...c.blocks) }
      if (res.next_cursor === '') break
      cursor = res.next_cursor
    }
    expect(answers).to.equal(4)
    expect(seen.map((b) => b.number)).to.deep.equal(Array.from({ length: 1000 }, (_, i) => i))
    const excluded = [seen[5]!.tx_id, seen[700]!.tx_id]
    const all = await fresh.sync.transactionChains({ did: long.owners[0]!, token_ids: [long.tokenId], exclude_transaction_ids: excluded, limit: 10_000 })
    expect(all.next_cursor).to.equal('')
    expect(all.chains[0]!.blocks).to.have.length(998)
    expect(all.chains[0]!.blocks.some((b) => excluded.includes(b.tx_id))).to.equal(false)
  })

  it('recovers a wallet after a signed challenge; a wrong signature recovers nothing', async () => {
    const short = buildTestTokenChain(ring, 3)
    await storeUnchecked(full, short)
    const owner = short.owners[3]!
    const client = await side(hosts[1]!, ring, false, fresh)
    try {
      // wrong key: another DID signs the challenge
      const stranger = ring.newDid()
      await expectRbtError(client.sync.recover(owner, async (h) => ring.sign(stranger, h), hosts[0]!.peerId), ErrorCode.VERIFICATION_FAILED)
      expect(await client.repos.tokens.get(short.tokenId)).to.equal(undefined)
      expect(await client.repos.blocks.latest(short.tokenId)).to.equal(undefined)
      // a replayed nonce is refused too
      const { nonce } = await client.net.challenge(hosts[0]!.peerId, owner)
      const pages = client.net.owned(hosts[0]!.peerId, { did: owner, nonce, signature: ring.sign(owner, sha3Hex(`rbt-recover-from-fullnode:${owner}:${nonce}`)) })
      for await (const p of pages) expect(p.map((t) => t.tokenId)).to.deep.equal([short.tokenId])
      const replay = client.net.owned(hosts[0]!.peerId, { did: owner, nonce, signature: ring.sign(owner, sha3Hex(`rbt-recover-from-fullnode:${owner}:${nonce}`)) })
      await expectRbtError((async () => { for await (const _ of replay) { /* drain */ } })(), ErrorCode.FORBIDDEN)

      const summary = await client.sync.recover(owner, async (h) => ring.sign(owner, h), hosts[0]!.peerId)
      expect(summary.tokens).to.equal(1)
      expect(summary.by_type).to.deep.equal({ rbt: { count: 1, value: 1 } })
      expect(summary.by_status).to.deep.equal({ Free: 1 })
      expect(summary.blocks_stored).to.equal(4)
      const t = await client.repos.tokens.get(short.tokenId)
      expect(t?.owner).to.equal(owner)
      expect(t?.latestBlockNumber).to.equal(3)
      expect((await client.repos.balances.get(owner))?.sums.rbt?.Free).to.equal(1000)
      expect((await client.repos.blocks.chain(short.tokenId)).map((b) => b.number)).to.deep.equal([0, 1, 2, 3])
    } finally {
      await client.store.close()
      rmSync(client.dir, { recursive: true, force: true })
    }
  })

  it('a forged chain offered during sync is rejected and nothing of the recovery is stored', async () => {
    const good = buildTestTokenChain(ring, 2)
    const owner = good.owners[2]!
    // another token whose last block carries a quorum signature over something else
    const other = buildTestTokenChain(ring, 2)
    const last = other.blocks[2]!
    const q = other.quorums[0]!
    const forgedBlock: Block = setSignature(last, q, ring.sign(q, sha3Hex('not this block'), 'quorum'))
    const forgedEnv = encodeBlockEnvelope(forgedBlock)
    const forged = { tokenId: other.tokenId, tokenContent: other.tokenContent, envelopes: [...other.envelopes.slice(0, 2), forgedEnv] }
    await storeUnchecked(full, good)
    await storeUnchecked(full, forged)
    const forgedOwner = other.owners[2]!
    const client = await side(hosts[1]!, ring, false, fresh)
    try {
      const e = await expectRbtError(client.sync.recover(forgedOwner, async (h) => ring.sign(forgedOwner, h), hosts[0]!.peerId), ErrorCode.CHAIN_INVALID)
      expect(e.message).to.match(/signature|does not verify/)
      expect(await client.repos.tokens.get(other.tokenId)).to.equal(undefined)
      expect(await client.repos.blocks.latest(other.tokenId)).to.equal(undefined)
      expect(await client.repos.balances.get(forgedOwner)).to.equal(undefined)
      // the honest token of another owner still recovers
      const ok = await client.sync.recover(owner, async (h) => ring.sign(owner, h), hosts[0]!.peerId)
      expect(ok.tokens).to.equal(1)
      expect((await client.repos.tokens.get(good.tokenId))?.owner).to.equal(owner)
    } finally {
      await client.store.close()
      rmSync(client.dir, { recursive: true, force: true })
    }
  })

  it('a token the fullnode still lists but whose chain it serves moved on is not taken, and a stale Free copy of it is dropped', async () => {
    // the fullnode's record names owners[2]; the chain it serves has one more block, to owners[3]
    const chain = buildTestTokenChain(ring, 3)
    const stale = { ...chain, envelopes: chain.envelopes.slice(0, 3) }
    await storeUnchecked(full, stale)
    const last = decodeBlockEnvelope(chain.envelopes[3]!)
    await full.ledger.commit({ blocks: [{ record: blockRecordOf(chain.tokenId, last, Date.now()), envelope: chain.envelopes[3]! }] })
    const owner = chain.owners[2]!
    const client = await side(hosts[1]!, ring, false, fresh, [owner])
    try {
      // this node holds the old state, Free for owner
      await storeUnchecked(client, stale)
      const summary = await client.sync.recover(owner, async (h) => ring.sign(owner, h), hosts[0]!.peerId)
      expect(summary.token_ids).to.deep.equal([])
      expect(summary.tokens).to.equal(0)
      expect(summary.dropped_spent?.map((d) => d.token)).to.deep.equal([chain.tokenId])
      const t = await client.repos.tokens.get(chain.tokenId)
      expect(t?.owner === owner && t.status === TokenStatus.Free).to.equal(false)
      expect((await client.repos.balances.get(owner))?.sums.rbt?.Free ?? 0).to.equal(0)
      expect((await auditLedger(client.store)).problems).to.deep.equal([])
    } finally {
      await client.store.close()
      rmSync(client.dir, { recursive: true, force: true })
    }
  })

  it('sync-transaction-chain pulls chains this node does not hold from a fullnode, validated, and refuses a forged one', async () => {
    const c3 = buildTestTokenChain(ring, 2)
    await storeUnchecked(full, c3)
    const other = buildTestTokenChain(ring, 2)
    const q = other.quorums[2]!
    const bad = encodeBlockEnvelope(setSignature(other.blocks[2]!, q, ring.sign(q, sha3Hex('y'), 'quorum')))
    await storeUnchecked(full, { tokenId: other.tokenId, tokenContent: other.tokenContent, envelopes: [...other.envelopes.slice(0, 2), bad] })
    const client = await side(hosts[1]!, ring, false, fresh)
    try {
      const res = await client.sync.transactionChains({ did: c3.owners[0]!, token_ids: [c3.tokenId], fullnode: hosts[0]!.peerId })
      expect(res.next_cursor).to.equal('')
      expect(res.chains[0]!.blocks.map((b) => b.number)).to.deep.equal([0, 1, 2])
      expect(res.chains[0]!.blocks.map((b) => b.envelope)).to.deep.equal(c3.envelopes.map((e) => Buffer.from(e).toString('base64')))
      // stored as blocks only: the token is not in anybody's wallet here
      expect(await client.repos.tokens.get(c3.tokenId)).to.equal(undefined)
      await expectRbtError(client.sync.transactionChains({ did: c3.owners[0]!, token_ids: [other.tokenId], fullnode: hosts[0]!.peerId }), ErrorCode.CHAIN_INVALID)
      expect(await client.repos.blocks.latest(other.tokenId)).to.equal(undefined)
    } finally {
      await client.store.close()
      rmSync(client.dir, { recursive: true, force: true })
    }
  })

  // every failed archive was tried again in line (5 more tries, 31 s of waits): each chain that
  // never validates, a cheater's or a refused split's parts, held up the tokens announced after it
  it('a fullnode archiving what a peer announced is not held up by chains that do not validate: the good token behind two bad ones is archived at once, the bad ones never', async () => {
    const good = buildTestTokenChain(ring, 2)
    const bads = [buildTestTokenChain(ring, 1), buildTestTokenChain(ring, 1)]
    for (const b of bads) {
      const q = b.quorums[1]!
      await storeUnchecked(full, { tokenId: b.tokenId, tokenContent: b.tokenContent, envelopes: [b.envelopes[0]!, encodeBlockEnvelope(setSignature(b.blocks[1]!, q, ring.sign(q, sha3Hex('not this block'), 'quorum')))] })
    }
    await storeUnchecked(full, good)
    const archiver = await side(hosts[1]!, ring, true, fresh)
    try {
      archiver.sync.learn(hosts[0]!.peerId, [...bads.map((b) => b.tokenId), good.tokenId])
      await waitFor('the good token archived', async () => (await archiver.repos.blocks.latest(good.tokenId)) !== undefined, 8000, 50)
      await archiver.sync.idle()
      for (const b of bads) expect(await archiver.repos.blocks.latest(b.tokenId), 'a chain that does not validate archived').to.equal(undefined)
    } finally {
      archiver.sync.stop()
      await archiver.store.close()
      rmSync(archiver.dir, { recursive: true, force: true })
    }
  })

  it('a forged chain is rejected by a fullnode archiving it, and a node that is not a fullnode refuses challenges', async () => {
    const other = buildTestTokenChain(ring, 1)
    const q = other.quorums[1]!
    const bad = encodeBlockEnvelope(setSignature(other.blocks[1]!, q, ring.sign(q, sha3Hex('x'), 'quorum')))
    await storeUnchecked(full, { tokenId: other.tokenId, tokenContent: other.tokenContent, envelopes: [other.envelopes[0]!, bad] })
    await expectRbtError(fresh.sync.archive(hosts[0]!.peerId, [other.tokenId]), ErrorCode.CHAIN_INVALID)
    expect(await fresh.repos.blocks.latest(other.tokenId)).to.equal(undefined)
    await expectRbtError(full.net.challenge(hosts[1]!.peerId, other.owners[1]!), ErrorCode.FORBIDDEN)
  })
})
