/**
 * `rbtnode repair`: brings a damaged database back as far as it can, without a running node.
 * LevelDB's own repair rebuilds the MANIFEST from the table and log files it finds (files it cannot
 * use are moved aside into `lost/`); then the token ledger's derived records are rebuilt from the
 * token records and the ledger audited, and the report says what was rebuilt and what is missing.
 * What a DID lost comes back by wallet sync from a fullnode once the node runs again.
 */
import { ClassicLevel } from 'classic-level'
import { appendFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { rebuildDerivedRecords, type RebuildReport } from './ledger-rebuild.js'
import { LevelStore } from './level-store.js'
import { levelDbLossNotes } from './leveldb-log.js'
import { auditLedger } from './token-ledger.js'

export interface DbFiles { tables: number, logs: number, manifests: number, bytes: number, current: boolean }

export interface RepairReport {
  location: string
  /** how the database opened before the repair: 'ok', or the error it failed with */
  before: string
  filesBefore: DbFiles
  filesAfter: DbFiles
  /** files moved aside into `<db>/lost/` by this repair: the old MANIFEST, and tables or logs LevelDB could not use */
  lost: string[]
  records: { tokens: number, blocks: number, transactions: number }
  rebuilt: RebuildReport
  /** what LevelDB said it dropped or ignored while recovering and repairing (its LOG file) */
  dropped: string[]
  /** records whose stored bytes are no longer JSON (damage a table's missing checksum check let through): moved aside into `lost/undecodable.jsonl` */
  undecodable: string[]
  /** what the audit still finds wrong after the rebuild */
  problems: string[]
  /** DIDs hosted here (their folders under dids/) */
  localDids: string[]
  /** DIDs whose wallets should be synced from a fullnode: something of theirs is gone or inconsistent */
  syncDids: string[]
  /** whether anything may have been lost (files moved aside, balances that fell, audit problems) */
  lossSuspected: boolean
}

export function dbFiles (location: string): DbFiles {
  const out: DbFiles = { tables: 0, logs: 0, manifests: 0, bytes: 0, current: false }
  if (!existsSync(location)) return out
  for (const name of readdirSync(location)) {
    const st = statSync(join(location, name))
    if (!st.isFile()) continue
    if (/\.(ldb|sst)$/.test(name)) out.tables++
    else if (/\.log$/.test(name)) out.logs++
    else if (/^MANIFEST-/.test(name)) out.manifests++
    else if (name === 'CURRENT') out.current = true
    else continue
    out.bytes += st.size
  }
  return out
}

const lostFiles = (location: string): string[] => {
  const dir = join(location, 'lost')
  return existsSync(dir) ? readdirSync(dir).sort() : []
}

/** Opens the database as it is, creating nothing: 'ok', or why it does not open. Throws when a node holds it. */
async function tryOpen (location: string): Promise<string> {
  const db = new ClassicLevel(location, { createIfMissing: false })
  try {
    await db.open()
    await db.close()
    return 'ok'
  } catch (e) {
    const text = (e as { cause?: { message?: string } }).cause?.message ?? errorMessage(e)
    if (/lock/i.test(text)) throw new RbtError(ErrorCode.STORAGE, `the database at ${location} is in use (a node is running on this data dir): stop the node first (rbtnode shutdown), then run repair`)
    return text
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * LevelDB's repair reads tables without checking their blocks' checksums, so damaged bytes inside a
 * data block can come back as a record's value. Every value this store writes is JSON text: a value
 * that is not (or not UTF-8) is damage. Each is copied (key and bytes, base64) into
 * `lost/undecodable.jsonl` and deleted, so the rebuild and the audit read only whole records and
 * the DIDs they belonged to are synced. Returns the keys, as `collection/key`.
 */
async function dropUndecodable (location: string): Promise<string[]> {
  const db = new ClassicLevel<Buffer, Buffer>(location, { createIfMissing: false, keyEncoding: 'buffer', valueEncoding: 'buffer' })
  await db.open()
  const bad: Array<[Buffer, Buffer]> = []
  try {
    for await (const [k, v] of db.iterator()) {
      try { JSON.parse(utf8.decode(v)) } catch { bad.push([k, v]) }
    }
    if (bad.length === 0) return []
    const dir = join(location, 'lost')
    mkdirSync(dir, { recursive: true })
    appendFileSync(join(dir, 'undecodable.jsonl'), bad.map(([k, v]) => JSON.stringify({ key: k.toString('base64'), value: v.toString('base64') }) + '\n').join(''))
    await db.batch(bad.map(([key]) => ({ type: 'del' as const, key })), { sync: true })
  } finally {
    await db.close()
  }
  // sublevel keys are `!collection!key`
  return bad.map(([k]) => {
    const text = k.toString('utf8')
    const m = /^!([^!]+)!(.*)$/s.exec(text)
    return m === null ? JSON.stringify(text) : `${m[1]!}/${m[2]!}`
  })
}

/** The DIDs hosted by the node whose data dir holds `location` (`<dataDir>/db`). */
function localDids (dataDir: string): string[] {
  const dir = join(dataDir, 'dids')
  if (!existsSync(dir)) return []
  return readdirSync(dir).filter((n) => !n.startsWith('.') && statSync(join(dir, n)).isDirectory()).sort()
}

export async function repairStore (dataDir: string): Promise<RepairReport> {
  const location = join(dataDir, 'db')
  const filesBefore = dbFiles(location)
  if (filesBefore.tables + filesBefore.logs + filesBefore.manifests === 0 && !filesBefore.current) {
    throw new RbtError(ErrorCode.NOT_FOUND, `no database at ${location}: check -p (the node's working directory) and -testNet`)
  }
  const before = await tryOpen(location)
  // opening replays the log: what it dropped is in the LOG file now, before the repair starts a new one
  const dropped = levelDbLossNotes(location)
  const lostBefore = new Set(lostFiles(location))
  try {
    await ClassicLevel.repair(location)
  } catch (e) {
    throw new RbtError(ErrorCode.STORAGE, `LevelDB could not repair ${location}: ${errorMessage(e)}`, { cause: e })
  }
  dropped.push(...levelDbLossNotes(location))
  let undecodable: string[]
  try {
    undecodable = await dropUndecodable(location)
  } catch (e) {
    throw new RbtError(ErrorCode.STORAGE, `the repaired database at ${location} could not be scanned: ${errorMessage(e)}`, { cause: e })
  }
  const lost = lostFiles(location).filter((n) => !lostBefore.has(n))
  const store = new LevelStore(location)
  await store.open()
  try {
    const rebuilt = await rebuildDerivedRecords(store)
    const audit = await auditLedger(store)
    const dids = localDids(dataDir)
    const fell = new Set(rebuilt.balanceChanges.filter((c) => c.after < c.before).map((c) => c.did))
    const named = new Set(dids.filter((d) => audit.problems.some((p) => p.includes(d))))
    // the repair always moves the old MANIFEST and the logs it turned into tables aside; a table moved aside was damaged
    const lossSuspected = lost.some((n) => /\.(ldb|sst)$/.test(n)) || undecodable.length > 0 || dropped.length > 0 || fell.size > 0 || audit.problems.length > 0 || /missing files/i.test(before)
    // a record gone whole leaves no trace to name its DID: when anything may be lost, every DID hosted here is synced
    const syncDids = lossSuspected ? [...new Set([...dids, ...fell, ...named])].sort() : []
    return {
      location,
      before,
      filesBefore,
      filesAfter: dbFiles(location),
      lost,
      dropped,
      undecodable,
      records: { tokens: audit.tokens, blocks: audit.blocks, transactions: audit.transactions },
      rebuilt,
      problems: audit.problems,
      localDids: dids,
      syncDids,
      lossSuspected
    }
  } finally {
    await store.close()
  }
}

/** The report as lines for a terminal. */
export function renderRepairReport (r: RepairReport): string {
  const f = (x: DbFiles): string => `${x.tables} table(s), ${x.logs} log(s), ${x.manifests} manifest(s)${x.current ? '' : ', no CURRENT'}`
  const lines = [
    `database       ${r.location}`,
    `before         ${r.before === 'ok' ? 'opened' : `did not open: ${r.before}`}`,
    `files          before ${f(r.filesBefore)}; after ${f(r.filesAfter)}`,
    `moved aside    ${r.lost.length === 0 ? 'nothing' : `${r.lost.join(', ')} (in lost/)`}`,
    `records        ${r.records.tokens} token(s), ${r.records.blocks} block(s), ${r.records.transactions} transaction(s)`,
    `rebuilt        owner index ${r.rebuilt.written.ownerIndex} written/${r.rebuilt.removed.ownerIndex} removed, free-FT index ${r.rebuilt.written.freeFts}/${r.rebuilt.removed.freeFts}, balances ${r.rebuilt.written.balances}/${r.rebuilt.removed.balances}`
  ]
  for (const c of r.rebuilt.balanceChanges) lines.push(`balance        ${c.did} ${c.family}/${c.status}: was ${c.before}, the tokens held now sum to ${c.after}`)
  for (const d of r.dropped) lines.push(`dropped        ${d}`)
  if (r.undecodable.length > 0) lines.push(`damaged        ${r.undecodable.length} record(s) no longer readable, moved aside (lost/undecodable.jsonl): ${r.undecodable.slice(0, 5).join(', ')}${r.undecodable.length > 5 ? ', …' : ''}`)
  for (const p of r.problems) lines.push(`missing        ${p}`)
  if (r.syncDids.length > 0) {
    lines.push('to recover     start the node, then sync each DID from a fullnode (asks for the DID\'s password):')
    for (const d of r.syncDids) lines.push(`               rbtnode syncwallet -did ${d}`)
  } else if (!r.lossSuspected) {
    lines.push('result         nothing found missing; records cut from the end of the log leave no trace: after a crash or power loss,')
    lines.push('               sync the DIDs hosted here anyway (rbtnode syncwallet -did <DID>, once the node runs)')
  }
  return lines.join('\n')
}
