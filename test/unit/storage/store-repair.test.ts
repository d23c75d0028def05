import { expect } from 'chai'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { LevelStore } from '../../../src/storage/level-store.js'
import { Collections } from '../../../src/storage/token-records.js'
import { repairStore, renderRepairReport } from '../../../src/storage/store-repair.js'
import { auditLedger, TokenLedger } from '../../../src/storage/token-ledger.js'
import { levelTokenRepositories } from '../../../src/storage/token-repositories.js'
import { sha3Hex } from '../../../src/tokenchain/index.js'
import { TokenService } from '../../../src/tokens/index.js'
import { RbtError } from '../../../src/util/errors.js'
import { KeyRing } from '../tokenchain/fixtures.js'
import { ringSigner } from '../tokens/helpers.js'

/** A node's data dir (<work>/Rubix/TestNet) whose database holds two mints in a table and one in the log. */
async function damagedLater (): Promise<{ work: string, dataDir: string, db: string, did: string, inTable: number, inLog: number }> {
  const work = mkdtempSync(join(tmpdir(), 'rbtnode-repair-'))
  const dataDir = join(work, 'Rubix', 'TestNet')
  const db = join(dataDir, 'db')
  const ring = new KeyRing()
  const did = ring.newDid()
  mkdirSync(join(dataDir, 'dids', did), { recursive: true })
  const mint = async (count: number, startIndex: number): Promise<void> => {
    const store = new LevelStore(db)
    await store.open()
    const service = new TokenService({ ledger: new TokenLedger(store, sha3Hex), repos: levelTokenRepositories(store), verifier: ring.verifier, localMint: { allowed: true, refusal: '' } })
    await service.mintLocalRbt({ did, count, startIndex }, ringSigner(ring, did))
    await store.close()
  }
  await mint(4, 0)
  await mint(3, 4)
  // reopening replays the log into a table; the last mint stays in the new log
  await mint(2, 7)
  return { work, dataDir, db, did, inTable: 7, inLog: 2 }
}

const filesOf = (db: string, re: RegExp): string[] => readdirSync(db).filter((n) => re.test(n)).sort()

async function tokensAfter (db: string): Promise<{ tokens: number, problems: string[] }> {
  const store = new LevelStore(db)
  await store.open()
  try { return await auditLedger(store) } finally { await store.close() }
}

async function openError (db: string): Promise<string> {
  const store = new LevelStore(db)
  try {
    await store.open()
    await store.close()
    return ''
  } catch (e) { return (e as Error).message }
}

describe('storage: repairing a damaged database', function () {
  this.timeout(60_000)
  let work = ''
  afterEach(() => { if (work !== '') rmSync(work, { recursive: true, force: true }) })

  it('a MANIFEST cut in half: the start says what to do, repair brings every record back', async () => {
    const env = await damagedLater(); work = env.work
    const manifest = join(env.db, filesOf(env.db, /^MANIFEST-/).at(-1)!)
    truncateSync(manifest, Math.floor(statSync(manifest).size / 2))
    const msg = await openError(env.db)
    expect(msg).to.match(/is damaged/)
    expect(msg).to.include(`rbtnode repair -p ${env.work} -testNet`)
    expect(msg).to.match(/syncwallet -did/)

    const report = await repairStore(env.dataDir)
    expect(report.before).not.to.equal('ok')
    expect(report.records.tokens).to.equal(env.inTable + env.inLog)
    expect(report.problems).to.deep.equal([])
    expect(report.lossSuspected, JSON.stringify(report)).to.equal(false)
    expect(renderRepairReport(report)).to.match(/nothing found missing/)
    expect(await tokensAfter(env.db)).to.deep.include({ tokens: env.inTable + env.inLog, problems: [] })
  })

  it('a table file removed: repair opens what is left, rebuilds balances from the tokens and names the DID to sync', async () => {
    const env = await damagedLater(); work = env.work
    const tables = filesOf(env.db, /\.(ldb|sst)$/)
    expect(tables.length).to.be.greaterThan(0)
    for (const t of tables) rmSync(join(env.db, t))
    expect(await openError(env.db)).to.match(/is damaged.*rbtnode repair/)

    const report = await repairStore(env.dataDir)
    expect(report.lossSuspected).to.equal(true)
    expect(report.syncDids).to.deep.equal([env.did])
    // the later mint, in the log, is whole; the balance (rewritten by it) fell to what is left
    expect(report.records.tokens).to.equal(env.inLog)
    expect(report.rebuilt.balanceChanges.some((c) => c.did === env.did && c.before > c.after)).to.equal(true)
    expect(renderRepairReport(report)).to.include(`rbtnode syncwallet -did ${env.did}`)
    const after = await tokensAfter(env.db)
    expect(after.tokens).to.equal(env.inLog)
    expect(after.problems.filter((p) => /balance|owner index|free-FT/.test(p))).to.deep.equal([])
  })

  it('a table file damaged: its readable records are kept, the file is moved aside and reported', async () => {
    const env = await damagedLater(); work = env.work
    const table = join(env.db, filesOf(env.db, /\.(ldb|sst)$/)[0]!)
    const bytes = readFileSync(table)
    // garbage over the middle of the data blocks
    bytes.fill(0x77, Math.floor(bytes.length / 3), Math.floor(bytes.length / 3) + 256)
    writeFileSync(table, bytes)

    const report = await repairStore(env.dataDir)
    expect(report.lost.length).to.be.greaterThan(0)
    expect(report.lossSuspected).to.equal(true)
    expect(report.syncDids).to.include(env.did)
    const after = await tokensAfter(env.db)
    expect(after.tokens).to.be.at.least(env.inLog)
    expect(after.problems.filter((p) => /balance|owner index|free-FT/.test(p))).to.deep.equal([])
  })

  it('a record whose bytes are damaged but whose block reads (no checksum check): moved aside and reported, the rest audited', async () => {
    const env = await damagedLater(); work = env.work
    // what garbage inside a table's data block comes back as after LevelDB's repair: a value cut mid-JSON
    const raw = new ClassicLevel<string, string>(env.db, { keyEncoding: 'utf8', valueEncoding: 'utf8' })
    await raw.open()
    const tokensPrefix = `!${Collections.tokens}!`
    let victim = ''
    for await (const [k, v] of raw.iterator({ gt: tokensPrefix, lt: `${tokensPrefix}\uffff`, limit: 1 })) {
      victim = k
      await raw.put(k, v.slice(0, 40) + 'wwww')
    }
    await raw.close()
    expect(victim).to.not.equal('')

    const report = await repairStore(env.dataDir)
    expect(report.undecodable).to.deep.equal([`${Collections.tokens}/${victim.slice(tokensPrefix.length)}`])
    expect(report.lost).to.include('undecodable.jsonl')
    expect(report.lossSuspected).to.equal(true)
    expect(report.syncDids).to.deep.equal([env.did])
    expect(report.records.tokens).to.equal(env.inTable + env.inLog - 1)
    expect(renderRepairReport(report)).to.match(/damaged +1 record\(s\) no longer readable/)
    const kept = readFileSync(join(env.db, 'lost', 'undecodable.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { key: string, value: string })
    expect(kept.map((r) => Buffer.from(r.key, 'base64').toString('utf8'))).to.deep.equal([victim])
    const after = await tokensAfter(env.db)
    expect(after.tokens).to.equal(env.inTable + env.inLog - 1)
    expect(after.problems.filter((p) => /balance|owner index|free-FT/.test(p))).to.deep.equal([])
  })

  it('the log cut short: repair keeps the tables and the whole records of the log', async () => {
    const env = await damagedLater(); work = env.work
    const log = join(env.db, filesOf(env.db, /\.log$/).at(-1)!)
    truncateSync(log, Math.floor(statSync(log).size / 2))

    const report = await repairStore(env.dataDir)
    // the mint cut from the end of the log is gone whole (its balance update with it), the others are intact
    expect(report.records.tokens).to.equal(env.inTable)
    expect(report.problems).to.deep.equal([])
    expect(renderRepairReport(report)).to.match(/leave no trace[^]*syncwallet/)
    expect(await tokensAfter(env.db)).to.deep.include({ problems: [] })
  })

  it('refuses while a node holds the database', async () => {
    const env = await damagedLater(); work = env.work
    const held = new LevelStore(env.db)
    await held.open()
    try {
      await repairStore(env.dataDir)
      expect.fail('repair must refuse a database in use')
    } catch (e) {
      expect(e).to.be.instanceOf(RbtError)
      expect((e as Error).message).to.match(/in use .*stop the node first/)
    } finally { await held.close() }
  })
})
