import { expect } from 'chai'
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { NodeProcess } from '../helpers/node-process.js'
import { runCli } from '../helpers/cli.js'
import { USER_PASSWORD, complete, createLiteDid, mintRbt, quorumNetwork, transfer, type QuorumNetwork } from '../helpers/quorum-network.js'
import { testPostgres, type PgServer } from '../helpers/postgres.js'
import { waitFor } from '../helpers/wait.js'

type Rows = Array<Record<string, any>>
type Query = (sql: string, params?: unknown[]) => Promise<Rows>

/** Waits until the node's explorer has written everything the node holds. */
async function explorerInSync (node: NodeProcess): Promise<void> {
  const txCount = (await node.client.call('txList')).result!.length
  await waitFor(async () => {
    const s = (await node.client.call('nodeStatus')).result?.explorer
    return s?.state === 'in_sync' && s.pending === 0 && s.rows.transactions === txCount
  }, { timeoutMs: 30_000, what: 'the explorer to catch up' })
}

/** The database rows equal what the node's own API answers: transactions, DIDs, tokens and chains. */
async function expectMatchesNode (node: NodeProcess, q: Query): Promise<void> {
  const c = node.client
  const txs = (await c.call('txList')).result!
  const txRows = await q('SELECT * FROM explorer_transactions ORDER BY tx_id')
  const links = await q('SELECT tx_id, token_id FROM explorer_tx_tokens')
  const quorumLinks = await q('SELECT tx_id, quorum_did FROM explorer_tx_quorums')
  expect(txRows.map((r) => ({
    transactionID: r.tx_id,
    transaction_type: r.tx_type,
    token_type: r.token_type,
    sender: r.sender,
    receiver: r.receiver ?? '',
    amount: Number(r.amount_milli) / 1000,
    tokens: links.filter((l) => l.tx_id === r.tx_id).map((l) => l.token_id).sort(),
    quorums: JSON.parse(r.quorums as string),
    memo: r.memo ?? '',
    epoch: Number(r.epoch),
    block_ids: JSON.parse(r.block_ids as string),
    status: r.status
  }))).to.deep.equal([...txs].sort((a, b) => a.transactionID < b.transactionID ? -1 : 1).map((t) => ({ ...t, tokens: [...new Set(t.tokens)].sort() })))
  expect(quorumLinks.length).to.equal(txs.reduce((n, t) => n + new Set(t.quorums).size, 0))

  const dids = (await c.call('didList')).result!
  expect((await q('SELECT did FROM explorer_dids')).map((r) => r.did).sort()).to.deep.equal([...dids].sort())

  const tokenRows = await q('SELECT * FROM explorer_tokens')
  const owners = [...new Set(tokenRows.map((r) => r.owner as string))]
  let listed = 0
  for (const owner of owners) {
    for (const [type, kinds] of [['rbt', ['rbt', 'part']], ['nft', ['nft']]] as const) {
      const api = (await c.call('tokensList', { query: { did: owner, type } })).result!
      const mine = tokenRows.filter((r) => r.owner === owner && (kinds as readonly string[]).includes(r.kind as string))
      listed += api.length
      expect(mine.map((r) => ({ id: r.token_id, status: r.status, value: Number(r.value_milli), block: r.latest_block_id, tx: r.tx_id ?? '' })).sort((a, b) => a.id < b.id ? -1 : 1))
        .to.deep.equal(api.map((t) => ({ id: t.token_id, status: t.token_status, value: Math.round(t.token_value * 1000), block: t.latest_block_id, tx: t.transaction_id })).sort((a, b) => a.id < b.id ? -1 : 1))
    }
  }
  expect(listed).to.equal(tokenRows.length)
  const nftRows = await q('SELECT token_id, owner FROM explorer_nfts')
  expect(nftRows.length).to.equal(tokenRows.filter((r) => r.kind === 'nft').length)

  const blockRows = await q('SELECT token_id, block_number, block_id, block_hash, owner, tx_id FROM explorer_blocks')
  let chained = 0
  for (const t of tokenRows) {
    const chain = (await c.call('tokenChain', { params: { token_id: t.token_id as string } })).result!
    chained += chain.blocks.length
    expect(blockRows.filter((b) => b.token_id === t.token_id).map((b) => [Number(b.block_number), b.block_id, b.block_hash, b.owner, b.tx_id ?? '']).sort((x, y) => (x[0] as number) - (y[0] as number)))
      .to.deep.equal(chain.blocks.map((b) => [b.number, b.block_id, b.hash, b.owner, b.tx_id ?? '']))
  }
  // blocks of tokens held here (a received part token's parent chain may be stored without a token record)
  const held = new Set(tokenRows.map((r) => r.token_id))
  expect(blockRows.filter((r) => held.has(r.token_id)).length).to.equal(chained)

  // NFTs: the state rows equal GET /svc/v1/nfts/{id}/chain, the NFT rows equal GET /svc/v1/nfts
  const nfts = (await c.call('nftsList')).result!
  const nftRowsNow = await q('SELECT token_id, owner, value_milli, status, latest_block_id, creator FROM explorer_nfts')
  expect(nftRowsNow.map((r) => ({ id: r.token_id, owner: r.owner, value: Number(r.value_milli), status: r.status, block: r.latest_block_id })).sort((x, y) => x.id < y.id ? -1 : 1))
    .to.deep.equal(nfts.map((n) => ({ id: n.nft_id, owner: n.owner, value: Math.round(n.value * 1000), status: n.status, block: n.latest_block_id })).sort((x, y) => x.id < y.id ? -1 : 1))
  const stateRows = await q('SELECT * FROM explorer_nft_states')
  let states = 0
  for (const n of nfts) {
    if (n.latest_block_id === '') continue
    const chain = (await c.call('nftChain', { params: { nft_id: n.nft_id } })).result!
    states += chain.length
    expect(stateRows.filter((r) => r.token_id === n.nft_id).sort((x, y) => Number(x.block_number) - Number(y.block_number)).map((r) => ({
      transactionId: r.tx_id ?? '', initiator: r.initiator, owner: r.owner, epoch: Number(r.epoch), data: r.data ?? '', block_id: r.block_id, transaction_type: r.tx_type, value: Number(r.value_milli) / 1000
    })), `states of NFT ${n.nft_id}`).to.deep.equal(chain)
    expect(nftRowsNow.find((r) => r.token_id === n.nft_id)?.creator, `creator of NFT ${n.nft_id}`).to.equal(chain[0].owner)
  }
  expect(stateRows.length).to.equal(states)
}

async function nftTx (node: NodeProcess, did: string, nft: { nftId: string, value: number, data: string }): Promise<void> {
  const first = await node.client.call('txInitiate', { body: { initiator: did, owner: did, tokens: { nft: [nft], transferNftOwnership: false }, memo: 'explorer nft' } })
  const done = await complete(node.client, first, USER_PASSWORD)
  expect(done.status, done.message).to.equal(true)
}

describe('e2e: explorer service exports the chain data into a database', function () {
  this.timeout(300_000)
  let net: QuorumNetwork
  let xa = ''
  let xb = ''

  const send = async (from: NodeProcess, s: string, r: string, amount: number, memo: string): Promise<void> => {
    const out = await transfer(from.client, s, r, amount, USER_PASSWORD, memo)
    expect(out.status, out.message).to.equal(true)
  }

  before(async () => {
    net = await quorumNetwork()
    xa = await createLiteDid(net.a.client, USER_PASSWORD)
    xb = await createLiteDid(net.b.client, USER_PASSWORD)
    await waitFor(async () => (await net.a.client.envelope('didResolve', { params: { did: xb } })).status && (await net.b.client.envelope('didResolve', { params: { did: xa } })).status,
      { timeoutMs: 30_000, what: 'the explorer test DIDs to resolve each other' })
    await mintRbt(net.a.client, xa, 3, 0, USER_PASSWORD)
    await send(net.a, xa, xb, 1, 'before the explorer')
  })

  it('SQLite: setupservice backfills, follows transfers, rides out an outage and a restart with rows equal to the node\'s', async () => {
    const a = net.a
    const bad = await runCli(['setupservice', ...a.cliArgs, '-dbType', 'MySQL'])
    expect(bad.code).to.equal(1)
    expect(bad.stderr).to.include('supported types are SQLite, PostgreSQL, SQLServer')

    const res = await runCli(['setupservice', ...a.cliArgs, '-dbType', 'SQLite', '-dbName', 'explorer.sqlite', '-dbPassword', 'never-shown'])
    expect(res.code, res.stderr).to.equal(0)
    expect(res.stdout + res.stderr).to.not.include('never-shown')
    const root = join(a.dir, 'Rubix', 'TestNet')
    const file = join(root, 'explorer.sqlite')
    expect(res.stdout).to.include(`database  ${file}`)
    await explorerInSync(a)
    const db = new Database(file, { readonly: true })
    const q: Query = async (sql, params = []) => db.prepare(sql).all(...params) as Rows
    try {
      await expectMatchesNode(a, q)
      await send(a, xa, xb, 0.5, 'followed')
      await send(net.b, xb, xa, 0.25, 'received')
      await explorerInSync(a)
      await expectMatchesNode(a, q)

      // an NFT is created, deployed and executed: token, transaction, block and NFT state rows follow
      const form = { fields: { did: xa }, files: { metadata: { filename: 'meta.json', data: Buffer.from('{"explorer":true}') }, artifact: { filename: 'a.bin', data: Buffer.from('explorer artifact') } } }
      const nftId = (await a.client.call('nftsGenerate', { form })).result as string
      await nftTx(a, xa, { nftId, value: 1, data: 'explorer deploy' })
      await nftTx(a, xa, { nftId, value: 1, data: 'explorer state 2' })
      await explorerInSync(a)
      await expectMatchesNode(a, q)
      expect((await q('SELECT block_number, tx_type, owner, data FROM explorer_nft_states WHERE token_id = ? ORDER BY block_number', [nftId])).map((r) => [Number(r.block_number), r.tx_type, r.owner, r.data]))
        .to.deep.equal([[0, '09', xa, 'explorer deploy'], [1, '10', xa, 'explorer state 2']])
      expect(await q('SELECT token_id, kind FROM explorer_tokens WHERE token_id = ?', [nftId])).to.deep.equal([{ token_id: nftId, kind: 'nft' }])

      // the database "goes down" (test fault hook) while a transfer commits; nothing is lost
      const down = join(root, 'explorer.down')
      writeFileSync(down, '')
      await send(a, xa, xb, 0.125, 'during the outage')
      const st = await waitFor(async () => {
        const s = (await a.client.call('nodeStatus')).result?.explorer
        return s?.state === 'retrying' && s.pending > 0 ? s : undefined
      }, { timeoutMs: 15_000, what: 'the explorer to report the outage' })
      expect(st.last_error).to.match(/unavailable/)
      rmSync(down)
      await explorerInSync(a)
      await expectMatchesNode(a, q)

      // a restart reopens the saved configuration (password unsealed) and replays without duplicates
      const before = await q('SELECT (SELECT COUNT(*) FROM explorer_transactions) AS t, (SELECT COUNT(*) FROM explorer_blocks) AS b, (SELECT COUNT(*) FROM explorer_tokens) AS k')
      await a.restart()
      await explorerInSync(a)
      expect((await a.client.call('servicesGet', { params: { service_name: 'explorer_service' } })).result!.config).to.deep.include({ db_type: 'SQLite', password_set: true })
      expect(await q('SELECT (SELECT COUNT(*) FROM explorer_transactions) AS t, (SELECT COUNT(*) FROM explorer_blocks) AS b, (SELECT COUNT(*) FROM explorer_tokens) AS k')).to.deep.equal(before)
      await expectMatchesNode(a, q)
    } finally { db.close() }
    expect(existsSync(join(root, 'node.json'))).to.equal(true)
  })

  describe('PostgreSQL', function () {
    let server: PgServer | undefined
    let client: pg.Client | undefined

    before(async function () {
      const got = await testPostgres()
      if ('skip' in got) {
        console.log(`      SKIPPED PostgreSQL explorer test: ${got.skip}`)
        this.skip()
      }
      server = got as PgServer
    })
    after(async () => { await client?.end().catch(() => {}); await server?.dispose() })

    it('exports to a real server; the server is killed mid-stream and brought back: nothing missing or doubled', async () => {
      const b = net.b
      const u = server!.url
      const res = await runCli(['setupservice', ...b.cliArgs, '-dbType', 'PostgreSQL', '-dbAddress', u.hostname, '-dbPort', u.port, '-dbName', 'rbt_explorer', '-dbUsername', u.username, '-dbPassword', decodeURIComponent(u.password)])
      expect(res.code, res.stderr).to.equal(0)
      await explorerInSync(b)
      client = new pg.Client({ host: u.hostname, port: Number(u.port), user: u.username, password: decodeURIComponent(u.password), database: 'rbt_explorer' })
      client.on('error', () => {})
      await client.connect()
      const q: Query = async (sql, params = []) => (await client!.query(sql, params)).rows as Rows
      await expectMatchesNode(b, q)

      await send(net.a, xa, xb, 0.25, 'to bob, followed on PostgreSQL')
      await server!.kill()
      await client.end().catch(() => {})
      await send(b, xb, xa, 0.125, 'while PostgreSQL is down')
      await waitFor(async () => {
        const s = (await b.client.call('nodeStatus')).result?.explorer
        return s?.state === 'retrying' || (s?.retries ?? 0) > 0
      }, { timeoutMs: 20_000, what: 'the explorer to notice the dead server' })
      await server!.revive()
      await explorerInSync(b)
      client = new pg.Client({ host: u.hostname, port: Number(u.port), user: u.username, password: decodeURIComponent(u.password), database: 'rbt_explorer' })
      client.on('error', () => {})
      await client.connect()
      await expectMatchesNode(b, q)
      const dup = await q('SELECT tx_id, COUNT(*) AS n FROM explorer_transactions GROUP BY tx_id HAVING COUNT(*) > 1')
      expect(dup).to.deep.equal([])
    })
  })
})
