import { expect } from 'chai'
import type BetterSqlite3 from 'better-sqlite3'
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../../../src/storage/level-store.js'
import { NodeConfigStore } from '../../../src/storage/node-config-store.js'
import { TokenLedger } from '../../../src/storage/token-ledger.js'
import type { TokenRecord, TransactionRecord } from '../../../src/storage/token-records.js'
import { sha3Hex } from '../../../src/tokenchain/hash.js'
import { silentLogger } from '../../../src/util/logger.js'
import { QuorumRegistry } from '../../../src/node/consensus/quorum-registry.js'
import { kvExplorerSource } from '../../../src/node/explorer/explorer-sync.js'
import { ExplorerService } from '../../../src/node/explorer/explorer-service.js'
import { loadSqlite } from '../../../src/node/explorer/drivers.js'
import { waitFor } from '../../helpers/wait.js'

const ALICE = 'bafybmialice'
const BOB = 'bafybmibob'

function token (id: string, owner: string, n: number, txId: string, kind: TokenRecord['kind'] = 'rbt'): TokenRecord {
  return { tokenId: id, kind, tokenType: kind === 'nft' ? 8 : 3, value: 1000, owner, status: 'Free', latestBlockId: `${n}-h${id}${n}`, latestBlockNumber: n, txId, createdAt: 1, updatedAt: 1 }
}
function tx (id: string, kind: TransactionRecord['kind'], from: string, to: string | undefined, tokens: string[], quorums: string[] = []): TransactionRecord {
  return { txId: id, kind, transactionType: '02', initiator: from, ...(to !== undefined ? { receiver: to } : {}), tokens, amount: 1000 * tokens.length, comment: `memo ${id}`, status: 'committed', blockIds: tokens.map(() => 'b'), epoch: 1700000000, createdAt: 1, updatedAt: 1, extra: { quorums } }
}
const block = (tokenId: string, n: number, txId: string, owner: string) => ({
  record: { tokenId, number: n, blockId: `${n}-h${tokenId}${n}`, hash: `h${tokenId}${n}`, transactionType: '02', owner, signers: [owner], txId, epoch: 1700000000 },
  envelope: new TextEncoder().encode(`${tokenId}/${n}`)
})

describe('explorer: sync loop over a real token ledger into SQLite', function () {
  this.timeout(20_000)
  let dir = ''
  let store: LevelStore
  let config: NodeConfigStore
  let ledger: TokenLedger
  let service: ExplorerService | undefined
  const dids = [{ did: ALICE, type: 4, createdAt: 5 }]
  // the driver's own better-sqlite3: a second copy of SQLite must not open the file the service writes
  let Database: typeof BetterSqlite3
  before(async () => { Database = (await loadSqlite()).Database })

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-explorer-'))
    store = new LevelStore(join(dir, 'db'))
    await store.open()
    config = new NodeConfigStore(join(dir, 'node.json'))
    await config.open()
    ledger = new TokenLedger(store, sha3Hex)
  })
  afterEach(async () => { await service?.stop(); service = undefined; await store.close(); rmSync(dir, { recursive: true, force: true }) })

  const make = (): ExplorerService => new ExplorerService({
    config,
    sealer: new QuorumRegistry(config, store, join(dir, 'quorum.secret')),
    root: dir,
    source: kvExplorerSource(store, async () => dids),
    ledger,
    log: silentLogger,
    sync: { faultFile: join(dir, 'explorer.down'), backoff: { initialMs: 20, maxMs: 100 }, pollMs: 50 }
  })
  const inSync = async (s: ExplorerService): Promise<void> => {
    await waitFor(() => s.status().state === 'in_sync' && s.status().pending === 0, { timeoutMs: 10_000, what: 'the explorer to be in sync' })
  }
  const count = (db: BetterSqlite3.Database, table: string): number => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n

  it('backfills, follows commits, survives an outage and a restart without gaps or duplicates', async () => {
    await ledger.commit({ tokens: [{ record: token('t1', ALICE, 0, 'mint1') }, { record: token('t2', ALICE, 0, 'mint1') }], blocks: [block('t1', 0, 'mint1', ALICE), block('t2', 0, 'mint1', ALICE)], transactions: [tx('mint1', 'mint', ALICE, undefined, ['t1', 't2'])] })
    service = make()
    const view = await service.setup({ db_type: 'SQLite', db_name: 'explorer.sqlite', db_password: 'not-needed-but-sealed' })
    expect(view).to.deep.equal({ service_name: 'explorer_service', db_type: 'SQLite', db_address: null, db_port: null, db_name: join(dir, 'explorer.sqlite'), db_username: null, password_set: true })
    expect(readFileSync(join(dir, 'node.json'), 'utf8')).to.not.include('not-needed-but-sealed')
    await inSync(service)
    const db = new Database(join(dir, 'explorer.sqlite'), { readonly: true })
    try {
      expect(count(db, 'explorer_tokens')).to.equal(2)
      expect(count(db, 'explorer_blocks')).to.equal(2)
      expect(db.prepare('SELECT did, did_type, created_at FROM explorer_dids').all()).to.deep.equal([{ did: ALICE, did_type: 4, created_at: 5 }])
      expect(db.prepare('SELECT tx_id, tx_type, sender, receiver, amount_milli, memo FROM explorer_transactions').all()).to.deep.equal([{ tx_id: 'mint1', tx_type: 'mint', sender: ALICE, receiver: null, amount_milli: 2000, memo: 'memo mint1' }])

      // follow: a transfer of t1 with quorums, and an NFT
      await ledger.commit({ tokens: [{ record: token('t1', BOB, 1, 'tx2') }, { record: token('n1', ALICE, 0, 'nft1', 'nft') }], blocks: [block('t1', 1, 'tx2', BOB), block('n1', 0, 'nft1', ALICE)], transactions: [tx('tx2', 'transfer', ALICE, BOB, ['t1'], ['q1', 'q2']), tx('nft1', 'mint', ALICE, undefined, ['n1'])] })
      await inSync(service)
      expect(db.prepare("SELECT owner, latest_block_number FROM explorer_tokens WHERE token_id = 't1'").get()).to.deep.equal({ owner: BOB, latest_block_number: 1 })
      expect(db.prepare("SELECT quorum_did FROM explorer_tx_quorums WHERE tx_id = 'tx2' ORDER BY quorum_did").all()).to.deep.equal([{ quorum_did: 'q1' }, { quorum_did: 'q2' }])
      expect(db.prepare("SELECT quorums FROM explorer_transactions WHERE tx_id = 'tx2'").get()).to.deep.equal({ quorums: '["q1","q2"]' })
      expect(db.prepare('SELECT token_id, owner, creator FROM explorer_nfts').all()).to.deep.equal([{ token_id: 'n1', owner: ALICE, creator: ALICE }])
      expect(service.status().rows).to.deep.include({ tokens: 3, transactions: 3, blocks: 4, nfts: 1 })

      // outage: commits while the database fails are written once it is back
      writeFileSync(join(dir, 'explorer.down'), '')
      await ledger.commit({ tokens: [{ record: token('t2', BOB, 1, 'tx3') }], blocks: [block('t2', 1, 'tx3', BOB)], transactions: [tx('tx3', 'transfer', ALICE, BOB, ['t2'])] })
      await waitFor(() => service!.status().state === 'retrying' && service!.status().retries >= 2, { timeoutMs: 5000, what: 'the explorer to report retrying' })
      expect(service.status().last_error).to.match(/unavailable/)
      expect(service.status().pending).to.be.greaterThan(0)
      expect(count(db, 'explorer_transactions')).to.equal(3)
      rmSync(join(dir, 'explorer.down'))
      await inSync(service)
      expect(count(db, 'explorer_transactions')).to.equal(4)
      expect(db.prepare("SELECT owner FROM explorer_tokens WHERE token_id = 't2'").get()).to.deep.equal({ owner: BOB })

      // restart: the saved configuration is reopened, the full replay duplicates nothing
      await service.stop()
      service = make()
      service.open()
      await inSync(service)
      expect(service.status().last_full_sync_at).to.be.a('number')
      expect([count(db, 'explorer_tokens'), count(db, 'explorer_transactions'), count(db, 'explorer_blocks'), count(db, 'explorer_tx_tokens'), count(db, 'explorer_dids')]).to.deep.equal([3, 4, 5, 5, 1])
      expect(db.prepare('SELECT id, name FROM explorer_migrations ORDER BY id').all()).to.deep.equal([{ id: 1, name: 'initial' }, { id: 2, name: 'asset states' }])
    } finally { db.close() }
  })

  it('refuses unknown services and database types; a bad port is refused before anything is saved', async () => {
    service = make()
    for (const [input, msg] of [
      [{ service_name: 'other' }, /unknown service "other"/],
      [{ db_type: 'Oracle' }, /supported types are SQLite, PostgreSQL, SQLServer/],
      [{ db_type: 'PostgreSQL', db_port: 'x' }, /port must be a number/]
    ] as const) {
      try { await service.setup(input); expect.fail('should throw') } catch (e) { expect((e as Error).message).to.match(msg) }
    }
    expect(service.config()).to.equal(null)
    expect(service.status().state).to.equal('not_configured')
  })

  it('a database that cannot be reached is retried with backoff and reported, the ledger is unaffected', async () => {
    service = make()
    const view = await service.setup({ db_type: 'PostgreSQL', db_address: '127.0.0.1', db_port: 1, db_name: 'x', db_username: 'u', db_password: 'secret-pw' })
    expect(view).to.deep.include({ db_type: 'PostgreSQL', db_port: 1, db_username: 'u', password_set: true })
    expect(JSON.stringify(view)).to.not.include('secret-pw')
    await waitFor(() => service!.status().retries >= 2, { timeoutMs: 10_000, what: 'retries' })
    expect(service.status().state).to.be.oneOf(['retrying', 'connecting'])
    expect(service.status().last_error).to.match(/ECONNREFUSED|connect/)
    await ledger.commit({ tokens: [{ record: token('t9', ALICE, 0, 'm9') }], blocks: [block('t9', 0, 'm9', ALICE)], transactions: [tx('m9', 'mint', ALICE, undefined, ['t9'])] })
    expect(service.status().pending).to.equal(3)
  })
})
