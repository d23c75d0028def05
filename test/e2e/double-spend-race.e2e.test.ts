import { expect } from 'chai'
import { netnsAvailable } from '../helpers/netns.js'
import { USER_PASSWORD, complete, mintRbt, rbtBalance } from '../helpers/quorum-network.js'
import { raceNetwork, raceSpends, receiversRbt, restoredWallet, spend, type RaceNetwork, type SpendOutcome } from '../helpers/race-network.js'
import { waitFor } from '../helpers/wait.js'

/**
 * An owner who cheats: one wallet restored from its mnemonic on two nodes X and Y, which list
 * disjoint quorum sets, spends the same holding from both at once, to two receivers. At most one
 * of the two spends may be signed (docs/protocol.md, "Claims"); the other is refused, naming why.
 * Real node processes over libp2p; with root, every node in a namespace of its own on one bridge,
 * so that the last test can cut the network in two.
 */
describe('e2e: one wallet on two nodes racing the same tokens through disjoint quorum sets', function () {
  this.timeout(900_000)
  let net: RaceNetwork

  before(async function () {
    this.timeout(600_000)
    net = await raceNetwork({ lan: await netnsAvailable(), log: (s) => { if (process.env.E2E_VERBOSE === '1') process.stdout.write(`      ${s}\n`) } })
  })
  after(async function () {
    this.timeout(120_000)
    await net?.close()
  })

  /** At most one of the two spends went through; the other names its cause. */
  function atMostOne (x: SpendOutcome, y: SpendOutcome): number {
    const won = [x, y].filter((o) => o.status).length
    expect(won, `X: ${x.message} | Y: ${y.message}`).to.be.at.most(1)
    for (const o of [x, y]) {
      if (!o.status) expect(o.message).to.match(/STATE_CLAIMED|CLAIM_UNREACHABLE|spent by|held by transaction|exhausted|no free tokens|insufficient|not enough/i)
    }
    return won
  }

  it('RBT: in every race one token is paid at most once; the loser is told STATE_CLAIMED (or the spend that won) and its copy is not left Locked', async () => {
    let paid = 0
    // two races here (the race bench runs a hundred)
    for (let i = 0; i < 2; i++) {
      const w = await restoredWallet(net)
      const before = await receiversRbt(net)
      const { x, y } = await raceSpends(net, w.did, { rbt: 1 }, Math.floor(Math.random() * 50))
      const won = atMostOne(x, y)
      paid += won
      await waitFor(async () => await receiversRbt(net) === before + won, { timeoutMs: 30_000, what: 'the receivers to hold what was paid' })
      expect(await receiversRbt(net), `race ${i}`).to.equal(before + won)
      // the copy that lost is Free again (until its node learns the token was spent) or dropped
      for (const node of [net.x, net.y]) {
        await waitFor(async () => ((await node.client.call('tokensList', { query: { did: w.did, type: 'rbt' } })).result as unknown as Array<{ token_status: string }>).every((t) => t.token_status !== 'Locked'),
          { timeoutMs: 30_000, what: 'no token of the wallet left Locked' })
      }
    }
    expect(paid, 'most races have a winner').to.be.at.least(1)
  })

  it('FT: two spends of the same FTs from the two nodes: at most one is signed', async () => {
    const w = await restoredWallet(net, {
      types: ['ft'],
      mint: async (did) => {
        await mintRbt(net.x.client, did, 1, 0, USER_PASSWORD)
        const done = await complete(net.x.client, await net.x.client.envelope('ftsMint', { body: { did, ft_name: 'RACE', ft_count: 2, token_count: 1, ft_num_start_index: 0 } }), USER_PASSWORD)
        expect(done.status, done.message).to.equal(true)
      }
    })
    const { x, y } = await raceSpends(net, w.did, { ft: [{ ftName: 'RACE', numberOfFts: 2, creatorDID: w.did }] }, Math.floor(Math.random() * 50))
    const won = atMostOne(x, y)
    const fts = async (node: RaceNetwork['r1'], did: string): Promise<number> => ((await node.client.call('didBalancesFt', { params: { did } })).result as unknown as Array<{ name: string, count: number }> | null ?? []).filter((f) => f.name === 'RACE').reduce((s, f) => s + f.count, 0)
    await waitFor(async () => await fts(net.r1, net.bob) + await fts(net.r2, net.carol) === 2 * won, { timeoutMs: 30_000, what: 'the FTs paid to arrive' })
  })

  it('NFT: two transfers of the same NFT from the two nodes: at most one is signed', async () => {
    let nftId = ''
    const w = await restoredWallet(net, {
      types: ['nft'],
      mint: async (did) => {
        const made = await net.x.client.call('nftsGenerate', { form: { fields: { did }, files: { metadata: { filename: 'meta.json', data: Buffer.from('{"name":"race"}') }, artifact: { filename: 'a.bin', data: Buffer.from(`race ${Date.now()}`) } } } })
        nftId = made.result as string
        await mintRbt(net.x.client, did, 1, 0, USER_PASSWORD)
        const deployed = await spend(net.x.client, { initiator: did, owner: did, tokens: { nft: [{ nftId, value: 1, data: 'deployed' }] }, memo: 'deploy' })
        expect(deployed.status, deployed.message).to.equal(true)
      }
    })
    const { x, y } = await raceSpends(net, w.did, { nft: [{ nftId, value: 1, data: 'raced' }], transferNftOwnership: true }, Math.floor(Math.random() * 50))
    atMostOne(x, y)
  })

  it('a partition with each copy on its own side: neither side can claim (CLAIM_UNREACHABLE), nothing is signed; after the heal a spend goes through', async function () {
    if (net.lan === undefined) this.skip()
    const w = await restoredWallet(net)
    await net.partition()
    let healed = 0
    try {
      const { x, y } = await raceSpends(net, w.did, { rbt: 1 }, 0)
      expect(x.status, x.message).to.equal(false)
      expect(y.status, y.message).to.equal(false)
      for (const o of [x, y]) expect(o.message).to.match(/CLAIM_UNREACHABLE|unreachable|did not answer|timed out/i)
    } finally {
      await net.heal()
      healed = Date.now()
    }
    expect(await rbtBalance(net.x.client, w.did)).to.equal(1)
    expect(await rbtBalance(net.y.client, w.did)).to.equal(1)
    // transfers work again once the nodes have found each other
    let last: SpendOutcome | undefined
    await waitFor(async () => {
      last = await spend(net.x.client, { initiator: w.did, owner: net.bob, tokens: { rbt: 1 }, memo: 'after the heal' })
      if (process.env.E2E_VERBOSE === '1') process.stdout.write(`      ${((Date.now() - healed) / 1000).toFixed(1)} s: ${last.message.slice(0, 300)}\n`)
      return last.status
    }, { timeoutMs: 120_000, intervalMs: 1000, what: 'a transfer to go through after the heal' }).catch((e: Error) => { throw new Error(`${e.message}: ${last?.message ?? ''}`) })
    if (process.env.E2E_VERBOSE === '1') process.stdout.write(`      a transfer went through ${((Date.now() - healed) / 1000).toFixed(1)} s after the heal\n`)
  })
})
