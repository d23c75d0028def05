import { expect } from 'chai'
import { mkdtempSync, readdirSync, rmSync, statSync, truncateSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { RbtClient } from '../../src/client/rbt-client.js'
import { ApiError } from '../../src/client/api-error.js'
import { runCli } from '../helpers/cli.js'
import { NodeProcess } from '../helpers/node-process.js'
import { Tmpfs, requireTmpfs } from '../helpers/tmpfs.js'
import { waitFor } from '../helpers/wait.js'

const PASSWORD = 'disk-full-pw'

/** Mints `count` RBT through the two-step flow; throws the ApiError of a refusal. */
async function mint (client: RbtClient, did: string, count: number, startIndex: number): Promise<void> {
  const first = await client.call('tokensGenerateLocalRbt', { body: { did, number_of_tokens: count, start_index: startIndex } })
  const id = (first.result as unknown as { id: string }).id
  const done = await client.call('signatureComplete', { body: { id, password: PASSWORD } })
  expect(done.message).to.equal('Local RBT tokens generated successfully')
}

async function balance (client: RbtClient, did: string): Promise<number> {
  const r = (await client.call('didBalancesRbt', { params: { did } })).result as unknown as { balance: number } | Array<{ balance: number }>
  return Array.isArray(r) ? r[0]!.balance : r.balance
}

describe('e2e: a node whose disk fills up or whose database is damaged', function () {
  this.timeout(180_000)
  let fs: Tmpfs
  let node: NodeProcess

  after(async () => { await node?.dispose(); fs?.dispose() })

  it('loses no acknowledged mint: refuses with 507 while the disk is full, takes writes again once freed, and keeps them over a restart', async function () {
    requireTmpfs(this)
    fs = Tmpfs.mount(48)
    node = await new NodeProcess({ dir: fs.dir, extraArgs: ['-testNet'] }).start()
    const did = ((await node.client.call('didCreate', { body: { type: 4, password: PASSWORD } as never })).result as { did: string }).did
    await mint(node.client, did, 3, 0)
    let acknowledged = 3
    let next = 3

    fs.fill()
    // the first writes on a full disk may still land in buffers; every one acknowledged counts
    const refusal = await waitFor(async () => {
      try {
        await mint(node.client, did, 1, next++)
        acknowledged++
        return false
      } catch (e) {
        if (e instanceof ApiError) return e
        throw e
      }
    }, { what: 'a mint refused on the full disk', timeoutMs: 60_000, intervalMs: 1 })
    expect(refusal.httpStatus).to.equal(507)
    expect(refusal.code).to.equal('INSUFFICIENT_STORAGE')
    expect(refusal.message).not.to.include(fs.dir)
    // reads are still served; the metric says why writes are refused
    expect(await balance(node.client, did)).to.equal(acknowledged)
    expect(await (await fetch(`${node.url}/metrics`)).text()).to.match(/^rbtnode_storage_writes_refused\{cause="full"\} 1$/m)

    fs.free()
    await waitFor(async () => {
      try {
        await mint(node.client, did, 2, next)
        next += 2
        acknowledged += 2
        return true
      } catch (e) {
        if (e instanceof ApiError && [503, 507].includes(e.httpStatus)) return false
        throw e
      }
    }, { what: 'a mint taken again once the disk has room', timeoutMs: 60_000, intervalMs: 200 })
    expect(await balance(node.client, did)).to.equal(acknowledged)
    expect(node.logs).to.match(/store was reopened/)
    expect(await (await fetch(`${node.url}/metrics`)).text()).to.match(/^rbtnode_storage_writes_refused\{cause="full"\} 0$/m)

    await node.kill()
    await node.start()
    expect(await balance(node.client, did), 'balance after a restart').to.equal(acknowledged)
  })

  it('a damaged database: the start fails naming the repair, `rbtnode repair` brings it back, the balance is whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbtnode-damaged-'))
    const n = new NodeProcess({ dir, extraArgs: ['-testNet'] })
    try {
      await n.start()
      const did = ((await n.client.call('didCreate', { body: { type: 4, password: PASSWORD } as never })).result as { did: string }).did
      await mint(n.client, did, 3, 0)
      // a restart turns the log into a table and writes a new MANIFEST
      await n.restart()
      await mint(n.client, did, 2, 3)
      await n.stop()
      const db = join(dir, 'Rubix', 'TestNet', 'db')
      const manifest = join(db, readdirSync(db).filter((f) => f.startsWith('MANIFEST-')).sort().at(-1)!)
      truncateSync(manifest, Math.floor(statSync(manifest).size / 2))

      const failed = await n.start().then(() => '', (e: Error) => e.message)
      expect(failed).to.match(/is damaged .*rbtnode repair -p .* -testNet/)
      const repaired = await runCli(['repair', '-p', dir, '-testNet'])
      expect(repaired.code, repaired.stderr).to.equal(0)
      expect(repaired.stdout).to.match(/5 token\(s\)/)
      await n.start()
      expect(await balance(n.client, did)).to.equal(5)
    } finally {
      await n.dispose()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
