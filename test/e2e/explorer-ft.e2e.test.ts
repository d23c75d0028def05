import { expect } from 'chai'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { runCli } from '../helpers/cli.js'
import { NodeProcess } from '../helpers/node-process.js'
import { FIXTURE_ENV, USER_PASSWORD, complete, createLiteDid, mintRbt } from '../helpers/quorum-network.js'
import { waitFor } from '../helpers/wait.js'

type Rows = Array<Record<string, any>>

/**
 * The explorer exports FTs: after a mint on a node with the SQLite explorer, every FT is a row of
 * explorer_fts (name, creator, owner, value) and of explorer_tokens, the backing RBT rows say
 * BurntForFT, and the mint is an ft transaction.
 */
describe('e2e: explorer exports FT rows (SQLite)', function () {
  this.timeout(300_000)
  let node: NodeProcess

  before(async () => { node = await new NodeProcess({ extraArgs: ['-testNet'], env: FIXTURE_ENV }).start() })
  after(async () => { await node.dispose(); rmSync(node.dir, { recursive: true, force: true }) })

  it('mints 200 FTs and finds them, their backing and the mint in the database', async () => {
    const did = await createLiteDid(node.client, USER_PASSWORD)
    await mintRbt(node.client, did, 3, 0, USER_PASSWORD)
    const res = await runCli(['setupservice', ...node.cliArgs, '-dbType', 'SQLite', '-dbName', 'explorer.sqlite'])
    expect(res.code, res.stderr).to.equal(0)
    const first = await node.client.call('ftsMint', { body: { did, ft_name: 'EXP', ft_count: 200, token_count: 2, ft_num_start_index: 0 } })
    const done = await complete(node.client, first, USER_PASSWORD)
    expect(done.status, done.message).to.equal(true)
    const mint = done.result as { tx_id: string, backing_tokens: string[] }
    const txCount = (await node.client.call('txList')).result!.length
    await waitFor(async () => {
      const s = (await node.client.call('nodeStatus')).result?.explorer
      return s?.state === 'in_sync' && s.pending === 0 && s.rows.transactions === txCount && s.rows.fts === 200
    }, { timeoutMs: 60_000, what: 'the explorer to export the FTs' })
    const db = new Database(join(node.dir, 'Rubix', 'TestNet', 'explorer.sqlite'), { readonly: true })
    try {
      const fts = db.prepare('SELECT token_id, ft_name, creator, owner, value_milli, status, tx_id FROM explorer_fts').all() as Rows
      expect(fts).to.have.length(200)
      const api = (await node.client.call('tokensList', { query: { did, type: 'ft' } })).result!
      expect(fts.map((r) => r.token_id).sort()).to.deep.equal(api.map((t) => t.token_id).sort())
      for (const r of fts) expect(r).to.deep.include({ ft_name: 'EXP', creator: did, owner: did, value_milli: 10, status: 'Free', tx_id: mint.tx_id })
      const tokens = db.prepare("SELECT token_id, status FROM explorer_tokens WHERE kind = 'ft'").all() as Rows
      expect(tokens).to.have.length(200)
      const backing = db.prepare(`SELECT token_id, status FROM explorer_tokens WHERE token_id IN (${mint.backing_tokens.map(() => '?').join(',')})`).all(...mint.backing_tokens) as Rows
      expect(backing.map((r) => r.status)).to.deep.equal(['BurntForFT', 'BurntForFT'])
      const tx = db.prepare('SELECT token_type, tx_type FROM explorer_transactions WHERE tx_id = ?').get(mint.tx_id) as Record<string, unknown>
      expect(tx).to.deep.equal({ token_type: 'ft', tx_type: 'mint' })
    } finally { db.close() }
  })
})
