import { expect } from 'chai'
import { existsSync } from 'node:fs'
import type { RbtClient } from '../../src/client/rbt-client.js'
import { generateMnemonic } from '../../src/wallet/bip39.js'
import { NodeProcess } from '../helpers/node-process.js'
import { FIXTURE_ENV, complete, createLiteDid, mintRbt, quorumNetwork, rbtBalance, transfer, USER_PASSWORD, type QuorumNetwork } from '../helpers/quorum-network.js'
import { waitFor } from '../helpers/wait.js'

interface Done { status: boolean, message: string, result: unknown }
interface Listed { token_id: string, token_type: number, token_value: number, token_status: string, did: string, parent_token_id: string, latest_block_id: string, transaction_id: string }
interface Summary { did: string, fullnode: string, tokens: number, by_type: Record<string, { count: number, value: number }>, by_status: Record<string, number>, token_ids: string[] }

async function nftTx (client: RbtClient, initiator: string, owner: string, nft: { nftId: string, value: number, data?: string }, transferOwnership = false): Promise<Done> {
  const first = await client.envelope('txInitiate', { body: { initiator, owner, tokens: { nft: [nft], transferNftOwnership: transferOwnership }, memo: 'sync e2e' } })
  if (!first.status) return first
  return await complete(client, first, USER_PASSWORD)
}

/** Every token a DID holds on a node (RBT with parts, NFTs and FTs; burnt ones are history, not holdings), sorted by id. */
async function holdings (client: RbtClient, did: string): Promise<Listed[]> {
  const out: Listed[] = []
  for (const type of ['rbt', 'nft', 'ft']) out.push(...((await client.call('tokensList', { query: { did, type } })).result as unknown as Listed[]))
  return out.filter((t) => t.token_status !== 'Burnt').sort((x, y) => x.token_id.localeCompare(y.token_id))
}

/** Block ids and envelopes of a token's whole chain on a node. */
async function chainOf (client: RbtClient, tokenId: string): Promise<Array<{ block_id: string, envelope: string }>> {
  const dump = (await client.call('tokenChain', { params: { token_id: tokenId }, query: { limit: 10_000 } })).result as unknown as { blocks: Array<{ block_id: string, envelope: string }> }
  return dump.blocks.map((b) => ({ block_id: b.block_id, envelope: b.envelope }))
}

async function balancesOf (client: RbtClient, did: string): Promise<{ rbt: unknown, nft: unknown, ft: unknown }> {
  const b = (await client.call('didBalances', { params: { did } })).result as unknown as { rbt_balance: unknown, nft_balance: unknown }
  const ft = (await client.call('didBalancesFt', { params: { did } })).result
  return { rbt: b.rbt_balance, nft: b.nft_balance, ft }
}

/** Starts a node; on a loaded machine a start can miss the helper's deadline, so one more try with a fresh process. */
async function startNode (opts: ConstructorParameters<typeof NodeProcess>[0]): Promise<NodeProcess> {
  const first = new NodeProcess(opts)
  try {
    return await first.start()
  } catch {
    await first.dispose()
  }
  const second = new NodeProcess(opts)
  try {
    return await second.start()
  } catch (e) {
    await second.dispose()
    throw e
  }
}

describe('e2e: wallet recovery from a fullnode', function () {
  this.timeout(900_000)
  let net: QuorumNetwork
  let full: NodeProcess
  let fresh: NodeProcess | undefined
  let home: NodeProcess | undefined

  before(async () => {
    net = await quorumNetwork()
    full = await startNode({ n: 10, extraArgs: ['-testNet', '-fullnode'], env: { ...FIXTURE_ENV, RBTNODE_LOG_LEVEL: 'DEBUG' } })
    await net.join(full)
  })
  after(async () => {
    await fresh?.dispose()
    await home?.dispose()
    await full?.dispose()
  })

  it('a DID that received RBT (whole and part), an NFT and FTs, and pledged as a quorum, loses its node and data dir and is rebuilt from its mnemonic on a fresh node: same balances, statuses and chains', async () => {
    const { b } = net
    // the DID lives on its own node, whose data dir is deleted before the recovery
    home = await startNode({ n: 12, extraArgs: ['-testNet'], env: FIXTURE_ENV })
    await net.join(home)
    const a = home
    // fresh DIDs: a sender on B, and the DID to recover on its own node, made from a mnemonic
    const sender = await createLiteDid(b.client, USER_PASSWORD)
    const mnemonic = generateMnemonic()
    const did = ((await a.client.call('didCreate', { body: { type: 4, password: USER_PASSWORD, mnemonic } as never })).result as { did: string }).did
    // who hosts which DID, given explicitly so a loaded machine does not slow resolution
    for (const [node, who, host] of [[a, sender, b], [b, did, a], [full, sender, b], [full, did, a]] as const) {
      await node.client.call('nodeAddPeers', { body: { DID: who, PeerID: host.peerId, DIDType: 4 } })
    }
    await mintRbt(b.client, sender, 4, 0, USER_PASSWORD)

    const sent = await transfer(b.client, sender, did, 1.5, USER_PASSWORD, 'to be recovered')
    expect(sent.status, sent.message).to.equal(true)
    await waitFor(async () => await rbtBalance(a.client, did) === 1.5, { timeoutMs: 60_000, what: 'the DID to hold 1.5 RBT on its node' })

    const metadata = Buffer.from(JSON.stringify({ name: 'sync e2e', at: Date.now() }))
    const made = await b.client.call('nftsGenerate', { form: { fields: { did: sender }, files: { metadata: { filename: 'meta.json', data: metadata }, artifact: { filename: 'a.bin', data: Buffer.from('recover me') } } } })
    const nftId = made.result as string
    let done = await nftTx(b.client, sender, sender, { nftId, value: 1, data: 'deployed' })
    expect(done.status, done.message).to.equal(true)
    done = await nftTx(b.client, sender, did, { nftId, value: 1, data: 'to the DID' }, true)
    expect(done.status, done.message).to.equal(true)

    // FTs: 10 "RCV" backed by 1 RBT, 3 of them to the DID
    const mint = await complete(b.client, await b.client.envelope('ftsMint', { body: { did: sender, ft_name: 'RCV', ft_count: 10, token_count: 1, ft_num_start_index: 0 } }), USER_PASSWORD)
    expect(mint.status, mint.message).to.equal(true)
    const ftFirst = await b.client.envelope('txInitiate', { body: { initiator: sender, owner: did, tokens: { ft: [{ ftName: 'RCV', numberOfFts: 3, creatorDID: sender }] }, memo: 'fts to recover' } })
    expect(ftFirst.status, ftFirst.message).to.equal(true)
    const ftDone = await complete(b.client, ftFirst, USER_PASSWORD)
    expect(ftDone.status, ftDone.message).to.equal(true)

    // the DID becomes a quorum and pledges: a transfer on the fullnode's node between two of its DIDs
    // uses exactly five quorums, the DID and four of the network's
    await a.client.call('quorumsSetup', { body: { did, password: USER_PASSWORD, priv_password: USER_PASSWORD } })
    const payer = await createLiteDid(full.client, USER_PASSWORD)
    const payee = await createLiteDid(full.client, USER_PASSWORD)
    await mintRbt(full.client, payer, 1, 0, USER_PASSWORD)
    await full.client.call('quorumsRemoveAll')
    for (const q of [did, ...net.quorumDids.slice(0, 4)]) await full.client.call('quorumsAdd', { body: { did: q } })
    const pledging = await transfer(full.client, payer, payee, 0.5, USER_PASSWORD, 'the DID pledges')
    expect(pledging.status, pledging.message).to.equal(true)

    await waitFor(async () => {
      const h = await holdings(a.client, did)
      return h.some((t) => t.token_status === 'Pledged') && h.filter((t) => t.token_type === 10).length === 3
    }, { timeoutMs: 60_000, what: 'the DID to hold a pledged token on its node' })
    const before = await holdings(a.client, did)
    const beforeBalances = await balancesOf(a.client, did)
    const beforeChains = new Map<string, Array<{ block_id: string, envelope: string }>>()
    for (const t of before) beforeChains.set(t.token_id, await chainOf(a.client, t.token_id))
    expect(before.filter((t) => t.token_status === 'Pledged')).to.have.length.greaterThan(0)
    expect((beforeBalances.ft as Array<{ name: string, creator: string, count: number }>).filter((f) => f.name === 'RCV' && f.creator === sender).reduce((n, f) => n + f.count, 0)).to.equal(3)

    // the fullnode followed the announcements (transfers, mints and splits) and holds every chain at the same tip
    await waitFor(async () => {
      const held = await holdings(full.client, did)
      return held.length === before.length && held.every((t, i) => t.token_id === before[i]!.token_id && t.latest_block_id === before[i]!.latest_block_id)
    }, { timeoutMs: 120_000, what: 'the fullnode to hold every token of the DID at its latest block' }).catch((e: Error) => {
      throw new Error(`${e.message}\n--- fullnode log (sync) ---\n${full.logs.split('\n').filter((l) => /sync|fullnode|announce/i.test(l)).slice(-40).join('\n')}`)
    })

    // the DID's node and its data dir are gone: the DID comes back from its mnemonic on a fresh node
    const homeDir = home.dir
    await home.dispose()
    expect(existsSync(homeDir), 'the data dir of the DID\'s node is deleted').to.equal(false)
    fresh = await startNode({ n: 11, extraArgs: ['-testNet'], env: { ...FIXTURE_ENV, RBTNODE_LOG_LEVEL: 'DEBUG' } })
    await net.join(fresh)
    const again = ((await fresh.client.call('didCreate', { body: { type: 4, password: USER_PASSWORD, mnemonic } as never })).result as { did: string }).did
    expect(again).to.equal(did)
    expect(await rbtBalance(fresh.client, did)).to.equal(0)

    const first = await fresh.client.envelope('sync', { body: { did } })
    expect(first.status, first.message).to.equal(true)
    const final = await complete(fresh.client, first, USER_PASSWORD).catch((e: Error) => {
      throw new Error(`${e.message}\n--- recovering node log ---\n${fresh!.logs.split('\n').slice(-40).join('\n')}\n--- fullnode log ---\n${full.logs.split('\n').slice(-30).join('\n')}`)
    })
    expect(final.status, final.message).to.equal(true)
    const summary = final.result as Summary
    expect(summary.fullnode).to.equal(full.peerId)
    expect(summary.tokens, `recovered ${JSON.stringify(summary)} of ${JSON.stringify(before)}`).to.equal(before.length)
    const byType: Record<string, { count: number, value: number }> = {}
    const byStatus: Record<string, number> = {}
    for (const t of before) {
      const kind = t.token_type === 10 ? 'ft' : t.token_type === 2 ? 'nft' : t.parent_token_id !== '' ? 'part' : 'rbt'
      const e = (byType[kind] ??= { count: 0, value: 0 })
      e.count++
      e.value = Math.round((e.value + t.token_value) * 1000) / 1000
      byStatus[t.token_status] = (byStatus[t.token_status] ?? 0) + 1
    }
    expect(summary.by_type).to.deep.equal(byType)
    expect(summary.by_status).to.deep.equal(byStatus)
    expect(summary.by_status.Pledged).to.be.greaterThan(0)
    expect(summary.by_type.ft).to.deep.equal({ count: 3, value: 0.3 })

    expect(await balancesOf(fresh.client, did)).to.deep.equal(beforeBalances)
    const after = await holdings(fresh.client, did)
    const strip = (l: Listed[]): unknown[] => l.map((t) => ({ id: t.token_id, type: t.token_type, value: t.token_value, status: t.token_status, owner: t.did, parent: t.parent_token_id, tip: t.latest_block_id, ...(t.token_status === 'Pledged' ? { pledgedFor: t.transaction_id } : {}) }))
    expect(strip(after)).to.deep.equal(strip(before))
    for (const t of after) expect(await chainOf(fresh.client, t.token_id), `chain of ${t.token_id}`).to.deep.equal(beforeChains.get(t.token_id))

    // sync-transaction-chain answers the recovered chains in order, leaving out an excluded transaction
    const ids = after.map((t) => t.token_id)
    const res = (await fresh.client.call('syncTransactionChain', { body: { did, token_ids: ids, exclude_transaction_ids: [] } })).result as unknown as { chains: Array<{ token_id: string, blocks: Array<{ block_id: string, tx_id: string }> }>, next_cursor: string }
    expect(res.next_cursor).to.equal('')
    expect(res.chains.map((c) => c.token_id)).to.deep.equal(ids)
    for (const c of res.chains) expect(c.blocks.map((x) => x.block_id)).to.deep.equal(beforeChains.get(c.token_id)!.map((x) => x.block_id))
    const nftChain = res.chains.find((c) => c.token_id === nftId)!
    const lastTx = nftChain.blocks[nftChain.blocks.length - 1]!.tx_id
    const without = (await fresh.client.call('syncTransactionChain', { body: { did, token_ids: [nftId], exclude_transaction_ids: [lastTx] } })).result as unknown as { chains: Array<{ blocks: Array<{ tx_id: string }> }> }
    expect(without.chains[0]!.blocks.map((x) => x.tx_id)).to.not.include(lastTx)
    expect(without.chains[0]!.blocks).to.have.length(nftChain.blocks.length - 1)

    // a second sync finds everything already held and changes nothing
    const second = await complete(fresh.client, await fresh.client.envelope('sync', { body: { did } }), USER_PASSWORD)
    expect(second.status, second.message).to.equal(true)
    expect((second.result as { already_held: number }).already_held).to.equal(before.length)
    expect(await balancesOf(fresh.client, did)).to.deep.equal(beforeBalances)

    // the recovered pledge keeps its release rule: once the token it backs moves on, it is Free again
    await full.client.call('quorumsRemoveAll')
    for (const q of net.quorumDids) await full.client.call('quorumsAdd', { body: { did: q } })
    const onward = await transfer(full.client, payee, payer, 0.5, USER_PASSWORD, 'the backed token moves on')
    expect(onward.status, onward.message).to.equal(true)
    const pledged = before.filter((t) => t.token_status === 'Pledged').map((t) => t.token_id)
    await waitFor(async () => (await holdings(fresh!.client, did)).filter((t) => pledged.includes(t.token_id)).every((t) => t.token_status === 'Free'),
      { timeoutMs: 60_000, what: 'the recovered pledge to be released on the fresh node' })
  })

  it('refuses bad requests: a DID not hosted here, a node that is not a fullnode', async () => {
    const stranger = await createLiteDid(net.b.client, USER_PASSWORD)
    const notHere = await full.client.envelope('sync', { body: { did: stranger } })
    expect(notHere.status).to.equal(false)
    expect(notHere.message).to.match(/not hosted on this node/)
    const bad = await full.client.envelope('syncTransactionChain', { body: { did: stranger, token_ids: ['nope'], exclude_transaction_ids: [] } })
    expect(bad.status).to.equal(false)
    // asking a node that is not a fullnode
    const first = await net.b.client.envelope('sync', { body: { did: stranger, fullnode: net.a.peerId } })
    const final = await complete(net.b.client, first, USER_PASSWORD)
    expect(final.status).to.equal(false)
    // A refuses (not a fullnode): nothing is asked of the DID and nothing changes
    expect(final.message, final.message).to.match(/no fullnode answered/)
  })
})
