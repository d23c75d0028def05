import { expect } from 'chai'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../../src/storage/level-store.js'
import { auditLedger } from '../../src/storage/token-ledger.js'
import { levelTokenRepositories } from '../../src/storage/token-repositories.js'
import type { RbtClient } from '../../src/client/rbt-client.js'
import { runCli } from '../helpers/cli.js'
import { NodeProcess } from '../helpers/node-process.js'
import { waitFor } from '../helpers/wait.js'

const PASSWORD = 'crash-test-pw'
const BATCH = 25

/** Mints through the real two-step flow: the challenge, then the password. Returns the token ids. */
async function mint (client: RbtClient, did: string, count: number, startIndex: number): Promise<string[]> {
  const first = await client.call('tokensGenerateLocalRbt', { body: { did, number_of_tokens: count, start_index: startIndex } })
  expect(first.message).to.equal('Password needed')
  const id = (first.result as unknown as { id: string }).id
  const done = await client.call('signatureComplete', { body: { id, password: PASSWORD } })
  expect(done.message).to.equal('Local RBT tokens generated successfully')
  return (done.result as { token_ids: string[] }).token_ids
}

async function openAudit (node: NodeProcess): Promise<{ tokens: number, problems: string[], indexes: Set<number>, byIndex: Map<number, string> }> {
  const store = new LevelStore(join(node.dir, 'Rubix', 'TestNet', 'db'))
  await store.open()
  try {
    const report = await auditLedger(store)
    const byIndex = new Map<number, string>()
    for await (const [k, v] of store.collection<string>('mint-index').entries()) byIndex.set(Number(k.slice(k.lastIndexOf('/') + 1)), v)
    const repos = levelTokenRepositories(store)
    for await (const t of repos.tokens.all()) {
      if (t.status !== 'Free') report.problems.push(`token ${t.tokenId} is ${t.status}`)
    }
    return { tokens: report.tokens, problems: report.problems, indexes: new Set(byIndex.keys()), byIndex }
  } finally { await store.close() }
}

describe('e2e: tokens on a real node', function () {
  this.timeout(180_000)
  let node: NodeProcess
  let did: string

  before(async () => {
    node = await new NodeProcess({ extraArgs: ['-testNet'] }).start()
    did = (await node.client.call('didCreate', { body: { password: PASSWORD } })).result!.did
  })
  after(async () => { await node?.dispose() })

  it('survives SIGKILL in the middle of a stream of mints: every token in exactly one consistent state, balances exact after restart', async () => {
    let next = 0
    const confirmed = new Set<number>() // start indexes whose mint was acknowledged
    let audit = { tokens: 0, problems: [] as string[], indexes: new Set<number>(), byIndex: new Map<number, string>() }
    for (let round = 0; round < 2; round++) {
      if (round > 0) await node.start()
      let stop = false
      let inFlight = 0
      const target = confirmed.size + 6
      const workers = Array.from({ length: 4 }, async () => {
        while (!stop) {
          const start = next; next += BATCH
          inFlight++
          try {
            await mint(node.client, did, BATCH, start)
            confirmed.add(start)
          } catch { return } finally { inFlight-- } // the node died under us
        }
      })
      await waitFor(() => confirmed.size >= target, { timeoutMs: 90_000, what: 'six more acknowledged mints' })
      const pending = inFlight
      await node.kill() // SIGKILL with requests in flight
      stop = true
      await Promise.all(workers)
      expect(pending, 'mints in flight at the kill').to.be.greaterThan(0)

      audit = await openAudit(node)
      expect(audit.problems, audit.problems.join('\n')).to.deep.equal([])
      // each mint is all or nothing: whole batches only, and every acknowledged batch is there
      expect(audit.tokens % BATCH).to.equal(0)
      expect(audit.indexes.size).to.equal(audit.tokens)
      for (const start of confirmed) {
        for (let i = start; i < start + BATCH; i++) expect(audit.indexes.has(i), `index ${i} of an acknowledged mint`).to.equal(true)
      }
    }

    await node.start()
    const bal = await node.client.call('didBalancesRbt', { params: { did } })
    expect(bal.result).to.deep.equal({ balance: audit.tokens, locked: 0, pledged: 0, pinned: 0 })
    const list = await node.client.call('tokensList', { query: { did, type: 'rbt' } })
    expect((list.result as unknown[]).length).to.equal(audit.tokens)
    // minting continues after the crash, and a taken index is refused
    const more = await mint(node.client, did, 3, 1_000_000)
    expect(more).to.have.length(3)
    const again = await node.client.envelope('tokensGenerateLocalRbt', { body: { did, number_of_tokens: 1, start_index: 1_000_001 } })
    // the index check runs when the password arrives (the first answer is the challenge) or before
    if (again.status) {
      const fin = await node.client.envelope('signatureComplete', { body: { id: (again.result as unknown as { id: string }).id, password: PASSWORD } })
      expect(fin.status).to.equal(false)
      expect(fin.message).to.match(/already minted/)
    } else expect(again.message).to.match(/already minted/)
    const all = await node.client.call('didBalances', { params: { did } })
    expect(all.result).to.deep.include({ did })
    expect((all.result as { rbt_balance: Array<{ balance: number }> }).rbt_balance[0]!.balance).to.equal(audit.tokens + 3)
  })

  it('CLI: generatetestrbt (two-step), getaccountinfo and dumptokenchain', async () => {
    const before = (await node.client.call('didBalancesRbt', { params: { did } })).result as { balance: number }
    const gen = await runCli(['generatetestrbt', ...node.cliArgs, '-did', did, '-numTokens', '2', '-startIndex', '2000000', '-privPWD', PASSWORD])
    expect(gen.code, gen.stderr).to.equal(0)
    expect(gen.stderr).to.match(/Local RBT tokens generated successfully/)
    const ids = gen.stdout.trim().split('\n').filter((l) => l.startsWith('Qm'))
    expect(ids).to.have.length(2)

    const info = await runCli(['getaccountinfo', ...node.cliArgs, '-did', did])
    expect(info.code, info.stderr).to.equal(0)
    expect(info.stdout).to.match(new RegExp(`RBT \\(free\\)\\s+${(before.balance + 2).toFixed(3)}`))

    // as the reference: dumptokenchain also writes dump.json, which decodetokenchain rewrites
    const cwd = mkdtempSync(join(tmpdir(), 'rbt-dump-'))
    try {
      const dump = await runCli(['dumptokenchain', ...node.cliArgs, '-token', ids[0]!], { cwd })
      expect(dump.code, dump.stderr).to.equal(0)
      expect(dump.stdout).to.contain(`token    ${ids[0]!}`)
      expect(dump.stdout).to.match(/block 0 {2}0-[0-9a-f]{64}/)
      expect(dump.stdout).to.contain('05 Generated')
      expect(dump.stdout).to.contain(`signers  ${did}`)
      expect(dump.stderr).to.match(/\[INFO\] token chain dumped successfully: 1 block\(s\) written to .*dump\.json/)
      const blocks = JSON.parse(readFileSync(join(cwd, 'dump.json'), 'utf8')) as Array<Record<string, unknown>>
      expect(blocks).to.have.length(1)
      expect(blocks[0]!['2']).to.equal('05')
      expect(blocks[0]!['3']).to.equal(did)
      expect(blocks[0]!['98']).to.match(/^[0-9a-f]{64}$/)
      expect(Object.keys(blocks[0]!['99'] as object)).to.deep.equal([did])
      const decoded = await runCli(['decodetokenchain'], { cwd })
      expect(decoded.code, decoded.stderr).to.equal(0)
      const out = JSON.parse(readFileSync(join(cwd, 'output.json'), 'utf8')) as Array<Record<string, unknown>>
      expect(out[0]).to.include({ TCTransTypeKey: '05', TCTokenOwnerKey: did, TCBlockHashKey: blocks[0]!['98'] })
      const json = await runCli(['dumptokenchain', ...node.cliArgs, '-token', ids[0]!, '--json'], { cwd })
      const env = JSON.parse(json.stdout) as { result: { blocks: Array<{ number: number, envelope: string }> } }
      expect(env.result.blocks).to.have.length(1)
      expect(env.result.blocks[0]!.envelope).to.match(/^[A-Za-z0-9+/]+=*$/)

      const bad = await runCli(['dumptokenchain', ...node.cliArgs, '-token', 'nope'])
      expect(bad.code).to.equal(2)
      const unknown = await runCli(['dumptokenchain', ...node.cliArgs, '-token', 'QmUeBM2pNTbyYZ4LrsCNHb3hUTpBwYgW7XHrmJucy9cKvy'], { cwd })
      expect(unknown.code).to.equal(1)
      expect(unknown.stderr).to.match(/not known/)
    } finally { rmSync(cwd, { recursive: true, force: true }) }
  })
})

describe('e2e: local minting outside test mode', function () {
  this.timeout(60_000)
  it('is refused with a message naming -testNet', async () => {
    const node = await new NodeProcess().start()
    try {
      const did = (await node.client.call('didCreate', { body: { password: PASSWORD } })).result!.did
      const env = await node.client.envelope('tokensGenerateLocalRbt', { body: { did, number_of_tokens: 1, start_index: 0 } })
      expect(env.status).to.equal(false)
      expect(env.message).to.match(/-testNet/)
    } finally { await node.dispose() }
  })
})
