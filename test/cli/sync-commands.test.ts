import { expect } from 'chai'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCommand, type Recorded } from './harness.js'
import { runCli } from '../helpers/cli.js'
import { cliDeps, setCliDeps } from '../../src/cli/deps.js'
import { withProgress } from '../../src/cli/consensus-progress.js'
import type { BaseFlags } from '../../src/cli/base-command.js'
import { NodeProcess } from '../helpers/node-process.js'
import type { RbtClient } from '../../src/client/rbt-client.js'
import type { SyncSummaryResult, SyncTransactionChainResult } from '../../src/api/contract/routes.js'

const A = 'bafybmi' + 'x'.repeat(52)
const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
const T1 = 'Qm' + 'a'.repeat(44)
const T2 = 'Qm' + 'b'.repeat(44)
const none = (): never => { throw new Error('no request expected') }

const challenge = { body: { status: true, message: 'Password needed', result: { id: 'op1', mode: 4, hash: null, only_priv_key: false } } }
const summary: SyncSummaryResult = {
  did: A,
  fullnode: PEER,
  tokens: 4,
  by_type: { rbt: { count: 2, value: 2 }, part: { count: 1, value: 0.25 }, nft: { count: 1, value: 1 } },
  by_status: { Free: 3, Pledged: 1 },
  blocks_stored: 9,
  blocks_fetched: 11,
  already_held: 1,
  token_ids: [T1, T2, 'Qm' + 'c'.repeat(44), 'Qm' + 'd'.repeat(44)]
}
const synced = { body: { status: true, message: `Wallet synced from fullnode ${PEER}: 4 token(s) recovered`, result: summary } }
/** A two-step sync: the challenge, then the summary. */
const twoStep = (req: Recorded): { status?: number, body: unknown } => req.url.endsWith('/svc/v1/sync') ? challenge : synced

type Block = SyncTransactionChainResult['chains'][number]['blocks'][number]
const block = (token: string, n: number, tx: string): Block => ({
  number: n, block_id: `${n}-${token.slice(2, 6)}${'0'.repeat(60)}`, hash: 'h', type: n === 0 ? '05' : '02', type_name: n === 0 ? 'Generated' : 'Transferred',
  owner: A, signers: [A], tx_id: tx, time: '2026-11-21T10:00:00.000Z', envelope: 'AAAA'
})

describe('cli: sync commands against a stub transport', function () {
  this.timeout(30_000)
  let dir = ''
  let cwd = ''
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-cli-sync-'))
    cwd = process.cwd()
    process.chdir(dir)
  })
  after(() => { process.chdir(cwd); rmSync(dir, { recursive: true, force: true }) })

  it('the help of both verbs lists their flags', async () => {
    const wallet = await runCli(['syncwallet', '--help'])
    expect(wallet.code, wallet.stderr).to.equal(0)
    for (const f of ['--did', '--fullnode', '--privPWD', '--fp', '--addr', '--port', '--json']) expect(wallet.stdout).to.include(f)
    expect(wallet.stdout).to.match(/fullnode to ask: peer id/)
    expect(wallet.stdout).to.include('$ rbtnode sync -did')
    const chain = await runCli(['synctransactionchain', '-h'])
    expect(chain.code, chain.stderr).to.equal(0)
    for (const f of ['--did', '--tokenIDs', '--excludeTxnIDs', '--fullnode', '--out', '--pageSize', '--addr', '--port']) expect(chain.stdout).to.include(f)
  })

  it('a missing or malformed -did is a usage error (exit 2) and nothing is sent', async () => {
    for (const argv of [
      ['syncwallet'],
      ['sync', '-privPWD', 'pw'],
      ['synctransactionchain', '-tokenIDs', T1]
    ]) {
      const r = await runCommand(argv, none)
      expect(r.code, argv.join(' ')).to.equal(2)
      expect(r.stderr).to.match(/\[ERROR\] -did is required/)
      expect(r.requests).to.have.length(0)
    }
    for (const argv of [
      ['syncwallet', '-did', 'bafybmi123'],
      ['synctransactionchain', '-did', A.toUpperCase(), '-tokenIDs', T1]
    ]) {
      const r = await runCommand(argv, none)
      expect(r.code, argv.join(' ')).to.equal(2)
      expect(r.stderr).to.match(/\[ERROR\] -did is not a valid DID \(expected 59 characters starting with bafybmi\)/)
      expect(r.requests).to.have.length(0)
    }
  })

  it('syncwallet sends the DID and the fullnode, answers the challenge with the password and prints a summary', async () => {
    const ma = `/ip4/127.0.0.1/tcp/4010/p2p/${PEER}`
    const r = await runCommand(['syncwallet', '-did', A, '-fullnode', ma, '-privPWD', 'pw', '-port', '20011'], twoStep)
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests.map((q) => [q.method, q.url, q.body])).to.deep.equal([
      ['POST', 'http://localhost:20011/svc/v1/sync', { did: A, fullnode: ma }],
      ['POST', 'http://localhost:20011/svc/v1/signature', { id: 'op1', password: 'pw' }]
    ])
    expect(r.stderr).to.include(`[INFO] Wallet synced from fullnode ${PEER}: 4 token(s) recovered`)
    expect(r.stdout.split('\n')).to.include.members([
      `DID            ${A}`,
      `fullnode       ${PEER}`,
      'tokens         4 (1 already held here)',
      '  nft               1 token(s)  1.000 RBT',
      '  part              1 token(s)  0.250 RBT',
      '  rbt               2 token(s)  2.000 RBT',
      'by status      Free 3, Pledged 1',
      'blocks stored  9 (11 fetched from the fullnode)'
    ])
  })

  it('the alias sync works, without -fullnode nothing but the DID is sent, the default password answers, --json prints the raw result', async () => {
    const r = await runCommand(['sync', '-did', A, '--json'], twoStep)
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0]!.body).to.deep.equal({ did: A })
    expect(r.requests[1]!.body).to.deep.equal({ id: 'op1', password: 'mypassword' })
    expect(JSON.parse(r.stdout)).to.deep.equal(synced.body)
  })

  it('syncwallet refuses a -fullnode that is neither a peer id nor a multiaddr ending with one', async () => {
    for (const bad of ['fullnode.example', '/ip4/127.0.0.1/tcp/4010', '12D3KooWshort']) {
      const r = await runCommand(['syncwallet', '-did', A, '-fullnode', bad], none)
      expect(r.code, bad).to.equal(2)
      expect(r.stderr).to.match(/\[ERROR\] -fullnode must be a peer id/)
    }
  })

  it("syncwallet reports the node's refusal (first or second step) at [ERROR] with exit 1", async () => {
    let r = await runCommand(['syncwallet', '-did', A], () => ({ status: 404, body: { status: false, message: 'no fullnode found: add one to the config', result: { code: 'NOT_FOUND' } } }))
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] no fullnode found: add one to the config/)
    expect(r.stdout).to.equal('')
    r = await runCommand(['syncwallet', '-did', A, '-privPWD', 'nope'], (req) => req.url.endsWith('/sync')
      ? challenge
      : { status: 401, body: { status: false, message: 'wrong password', result: { code: 'WRONG_PASSWORD' } } })
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] wrong password/)
  })

  it('synctransactionchain follows next_cursor to the end, joins a chain cut by a page, prints one line per token and writes -out', async () => {
    const pages: Record<string, SyncTransactionChainResult> = {
      '': { did: A, chains: [{ token_id: T1, token_type: 0, kind: 'rbt', length: 3, blocks: [block(T1, 0, ''), block(T1, 1, 'tx1')] }], count: 2, next_cursor: '0:2' },
      '0:2': { did: A, chains: [{ token_id: T1, token_type: 0, kind: 'rbt', length: 3, blocks: [block(T1, 2, 'tx2')] }, { token_id: T2, token_type: 10, kind: 'part', length: 2, blocks: [block(T2, 0, 'tx0')] }], count: 2, next_cursor: '1:2' },
      '1:2': { did: A, chains: [], count: 0, next_cursor: '' }
    }
    const r = await runCommand(['synctransactionchain', '-did', A, '-tokenIDs', `${T1}, ${T2},${T1}`, '-excludeTxnIDs', 'txA,txB', '-pageSize', '2', '-fullnode', PEER, '-out', 'chains.json'], (req) => {
      const body = req.body as { cursor?: string }
      return { body: { status: true, message: 'Transaction chains: page', result: pages[body.cursor ?? '']! } }
    })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests.map((q) => q.body)).to.deep.equal([
      { did: A, token_ids: [T1, T2], exclude_transaction_ids: ['txA', 'txB'], limit: 2, fullnode: PEER },
      { did: A, token_ids: [T1, T2], exclude_transaction_ids: ['txA', 'txB'], cursor: '0:2', limit: 2, fullnode: PEER },
      { did: A, token_ids: [T1, T2], exclude_transaction_ids: ['txA', 'txB'], cursor: '1:2', limit: 2, fullnode: PEER }
    ])
    expect(r.requests[0]!.url).to.equal('http://localhost:20000/svc/v1/sync-transaction-chain')
    const lines = r.stdout.trimEnd().split('\n').map((l) => l.split(/\s{2,}/))
    expect(lines).to.deep.equal([
      ['TOKEN', 'KIND', 'BLOCKS', 'LATEST BLOCK'],
      [T1, 'rbt', '3', block(T1, 2, '').block_id],
      [T2, 'part', '1 of 2', block(T2, 0, '').block_id]
    ])
    expect(r.stderr).to.include('[INFO] Transaction chains of 2 token(s), 4 block(s) in 3 pages')
    expect(r.stderr).to.include(`[INFO] chains written to ${join(dir, 'chains.json')}`)
    const written = JSON.parse(readFileSync(join(dir, 'chains.json'), 'utf8')) as { did: string, chains: SyncTransactionChainResult['chains'] }
    expect(written.did).to.equal(A)
    expect(written.chains.map((c) => [c.token_id, c.blocks.map((b) => b.number)])).to.deep.equal([[T1, [0, 1, 2]], [T2, [0]]])
  })

  it('synctransactionchain --json prints one envelope with the joined chains', async () => {
    const r = await runCommand(['synctransactionchain', '-did', A, '-tokenIDs', T1, '--json'], (req) => {
      const cursor = (req.body as { cursor?: string }).cursor
      const chain = { token_id: T1, token_type: 0, kind: 'rbt', length: 2, blocks: [block(T1, cursor === undefined ? 0 : 1, 't')] }
      return { body: { status: true, message: 'm', result: { did: A, chains: [chain], count: 1, next_cursor: cursor === undefined ? '0:1' : '' } } }
    })
    expect(r.code, r.stderr).to.equal(0)
    const env = JSON.parse(r.stdout) as { status: boolean, result: SyncTransactionChainResult }
    expect(env.status).to.equal(true)
    expect(env.result.next_cursor).to.equal('')
    expect(env.result.count).to.equal(2)
    expect(env.result.chains).to.have.length(1)
    expect(env.result.chains[0]!.blocks.map((b) => b.number)).to.deep.equal([0, 1])
  })

  it('synctransactionchain refuses missing or malformed token ids and a bad -pageSize before calling the node', async () => {
    for (const [argv, msg] of [
      [['synctransactionchain', '-did', A], /-tokenIDs is required/],
      [['synctransactionchain', '-did', A, '-tokenIDs', ' , '], /-tokenIDs is required/],
      [['synctransactionchain', '-did', A, '-tokenIDs', `${T1},QmShort`], /-tokenIDs: "QmShort" is not a token id/],
      [['synctransactionchain', '-did', A, '-tokenIDs', T1, '-pageSize', '0'], /-pageSize must be a whole number greater than 0/],
      [['synctransactionchain', '-did', A, '-tokenIDs', T1, '-pageSize', '10001'], /-pageSize must be at most 10000/]
    ] as const) {
      const r = await runCommand([...argv], none)
      expect(r.code, argv.join(' ')).to.equal(2)
      expect(r.stderr).to.match(msg)
      expect(r.requests).to.have.length(0)
    }
  })

  it('synctransactionchain refuses an -out in a folder that does not exist, or naming a folder, before calling the node', async () => {
    let r = await runCommand(['synctransactionchain', '-did', A, '-tokenIDs', T1, '-out', join('no-such-folder', 'c.json')], none)
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/\[ERROR\] -out: the folder .*no-such-folder does not exist/)
    r = await runCommand(['synctransactionchain', '-did', A, '-tokenIDs', T1, '-out', '.'], none)
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/is a folder; name a file/)
  })

  it("synctransactionchain reports the node's message at [ERROR] with exit 1 and writes no -out file", async () => {
    const r = await runCommand(['synctransactionchain', '-did', A, '-tokenIDs', T1, '-out', 'never.json'],
      () => ({ status: 404, body: { status: false, message: `token ${T1} has no chain on this node and no fullnode was found to pull it from`, result: { code: 'NOT_FOUND' } } }))
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include(`[ERROR] token ${T1} has no chain on this node and no fullnode was found to pull it from`)
    expect(r.stdout).to.equal('')
    expect(() => readFileSync(join(dir, 'never.json'))).to.throw(/ENOENT/)
  })
})

describe('cli: the progress line of long calls', function () {
  this.timeout(20_000)
  const flags = { json: false } as unknown as BaseFlags
  let err = ''
  let restore: () => void = () => {}
  let wasTty: boolean | undefined
  beforeEach(() => {
    err = ''
    wasTty = process.stderr.isTTY
    process.stderr.isTTY = true
    restore = setCliDeps({ stderr: (t) => { err += t }, prompter: { interactive: true, password: async () => { const at = err.length; await new Promise((resolve) => setTimeout(resolve, 1200)); return at === err.length ? 'quiet' : 'noisy' } } })
  })
  afterEach(() => { restore(); process.stderr.isTTY = wasTty as true })

  it('shows the label, the seconds and the detail on a terminal, and clears the line at the end', async () => {
    const v = await withProgress(flags, 'syncing transaction chains', async () => { await new Promise((resolve) => setTimeout(resolve, 1100)); return 7 }, () => '3 block(s) in 1 page(s)')
    expect(v).to.equal(7)
    expect(err).to.match(/\r\x1b\[Ksyncing transaction chains… \d+ s, 3 block\(s\) in 1 page\(s\)/)
    expect(err.endsWith('\r\x1b[K')).to.equal(true)
  })

  it('is silent while a password is typed, and with --json', async () => {
    const typed = await withProgress(flags, 'wallet sync running', async () => await cliDeps().prompter.password('pw?'))
    expect(typed).to.equal('quiet')
    err = ''
    await withProgress({ json: true } as unknown as BaseFlags, 'x', async () => { await new Promise((resolve) => setTimeout(resolve, 700)) })
    expect(err).to.equal('')
  })
})

const PASSWORD = 'sync-cli-pw'

async function chainOf (client: RbtClient, tokenId: string): Promise<unknown[]> {
  const blocks: unknown[] = []
  let next = ''
  do {
    const env = await client.call('tokenChain', { params: { token_id: tokenId }, ...(next !== '' ? { query: { block_id: next } } : {}) })
    blocks.push(...env.result!.blocks)
    next = env.result!.next_block_id
  } while (next !== '')
  return blocks
}

describe('cli: sync commands against real nodes', function () {
  this.timeout(240_000)
  let node: NodeProcess
  let full: NodeProcess
  let did = ''
  let dir = ''

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-cli-sync-real-'))
    ;[node, full] = await Promise.all([
      new NodeProcess({ extraArgs: ['-testNet'] }).start(),
      new NodeProcess({ extraArgs: ['-testNet', '-fullnode'] }).start()
    ])
    did = (await node.client.call('didCreate', { body: { type: 4, password: PASSWORD } as never })).result!.did
  })
  after(async () => {
    await node?.dispose()
    await full?.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  it('syncwallet on a node that knows no fullnode: a clear [ERROR] and exit 1', async () => {
    const r = await runCli(['syncwallet', ...node.cliArgs, '-did', did, '-privPWD', PASSWORD])
    expect(r.code, r.stderr).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] no fullnode found: add one to the config/)
    expect(r.stdout).to.equal('')
  })

  it("synctransactionchain on a token nobody holds reports the node's message", async () => {
    const unknown = 'QmUeBM2pNTbyYZ4LrsCNHb3hUTpBwYgW7XHrmJucy9cKvy'
    const r = await runCli(['synctransactionchain', ...node.cliArgs, '-did', did, '-tokenIDs', unknown])
    expect(r.code, r.stderr).to.equal(1)
    const direct = await node.client.envelope('syncTransactionChain', { body: { did, token_ids: [unknown] } })
    expect(direct.status).to.equal(false)
    expect(r.stderr).to.include(`[ERROR] ${direct.message}`)
    expect(direct.message).to.include(unknown)
  })

  it('synctransactionchain on tokens the node holds prints their blocks, across pages, and -out holds the chains GET /tokens/{id}/chain serves', async () => {
    const gen = await runCli(['generatetestrbt', ...node.cliArgs, '-did', did, '-numTokens', '3', '-startIndex', '0', '-privPWD', PASSWORD])
    expect(gen.code, gen.stderr).to.equal(0)
    const ids = gen.stdout.trim().split('\n').filter((l) => l.startsWith('Qm'))
    expect(ids).to.have.length(3)

    const out = join(dir, 'chains.json')
    const r = await runCli(['synctransactionchain', ...node.cliArgs, '-did', did, '-tokenIDs', ids.join(','), '-out', out])
    expect(r.code, r.stderr).to.equal(0)
    const written = JSON.parse(readFileSync(out, 'utf8')) as { did: string, chains: SyncTransactionChainResult['chains'] }
    expect(written.did).to.equal(did)
    expect(written.chains.map((c) => c.token_id)).to.deep.equal(ids)
    const rows = r.stdout.trimEnd().split('\n').map((l) => l.split(/\s{2,}/))
    expect(rows[0]).to.deep.equal(['TOKEN', 'KIND', 'BLOCKS', 'LATEST BLOCK'])
    for (const [i, id] of ids.entries()) {
      const served = await chainOf(node.client, id) as Array<{ block_id: string }>
      expect(served.length).to.be.greaterThan(0)
      expect(written.chains[i]!.blocks).to.deep.equal(served)
      expect(rows[i + 1]).to.deep.equal([id, 'rbt', String(served.length), served[served.length - 1]!.block_id])
    }

    // one block per answer: the command follows every cursor and prints the same
    const paged = await runCli(['synctransactionchain', ...node.cliArgs, '-did', did, '-tokenIDs', ids.join(','), '-pageSize', '1', '-out', join(dir, 'paged.json')])
    expect(paged.code, paged.stderr).to.equal(0)
    expect(paged.stdout).to.equal(r.stdout)
    expect(paged.stderr).to.match(/\[INFO\] Transaction chains of 3 token\(s\), 3 block\(s\) in [3-9] pages/)
    expect(JSON.parse(readFileSync(join(dir, 'paged.json'), 'utf8'))).to.deep.equal(written)
  })

  it('syncwallet with a wrong password reports the error and exits 1', async () => {
    // the fullnode learns which peer hosts the DID (it checks the DID's signature on the challenge)
    await full.client.call('nodeAddPeers', { body: { DID: did, PeerID: node.peerId, DIDType: 4 } })
    const r = await runCli(['syncwallet', ...node.cliArgs, '-did', did, '-fullnode', full.multiaddr, '-privPWD', 'not-the-password'])
    expect(r.code, r.stderr).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] .*wrong password/i)
    expect(r.stdout).to.equal('')
  })

  it('syncwallet with the right password against that fullnode prints the summary naming it', async () => {
    const r = await runCli(['sync', ...node.cliArgs, '-did', did, '-fullnode', full.multiaddr, '-privPWD', PASSWORD])
    expect(r.code, r.stderr).to.equal(0)
    // whether the fullnode has archived the tokens the earlier tests minted for this DID depends on
    // when their announcement reached it: the summary names the fullnode either way
    expect(r.stderr).to.match(new RegExp(`\\[INFO\\] Wallet synced from fullnode ${full.peerId}: (no tokens owned by ${did}|\\d+ token\\(s\\) recovered)`))
    expect(r.stdout).to.include(`fullnode       ${full.peerId}`)
    expect(r.stdout).to.match(/tokens {9}\d+/)
    expect(r.stdout).to.match(/blocks stored {2}\d+ \(\d+ fetched from the fullnode\)/)
  })
})
