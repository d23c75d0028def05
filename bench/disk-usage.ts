import { ClassicLevel } from 'classic-level'
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { directoryBytes } from '../src/node/metrics/resource-watch.js'

/**
 * A node's data directory measured on disk for the long-run bench: its LevelDB database compacted
 * (every level rewritten, overwritten and deleted records dropped) and its records summed per
 * collection, so a figure per transfer says what was kept, not what LevelDB has yet to clean up.
 * Works on the files of a stopped node (or on a copy taken while the node was idle).
 */
export interface DiskFigures {
  /** bytes of every file under the data directory, as the node left them */
  asWritten: number
  /** the same after a full compaction of the database */
  compacted: number
  /** per collection (sublevel): records and bytes of keys and values */
  collections: Map<string, { records: number, bytes: number }>
}

/** The database folder (`…/db`, holding CURRENT) under a node's working directory. */
export function databaseDir (root: string): string {
  const found = find(root, 0)
  if (found === undefined) throw new Error(`no LevelDB database under ${root}`)
  return found
}

function find (dir: string, depth: number): string | undefined {
  if (depth > 4) return undefined
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory()) continue
    const p = join(dir, e.name)
    if (e.name === 'db' && existsSync(join(p, 'CURRENT'))) return p
    const deeper = find(p, depth + 1)
    if (deeper !== undefined) return deeper
  }
  return undefined
}

/** Compacts the database of `root` (no node may hold it) and measures the directory before and after. */
export async function measureDataDir (root: string): Promise<DiskFigures> {
  const asWritten = await directoryBytes(root)
  const db = new ClassicLevel<Uint8Array, Uint8Array>(databaseDir(root), { keyEncoding: 'view', valueEncoding: 'view' })
  await db.open()
  const collections = new Map<string, { records: number, bytes: number }>()
  try {
    await db.compactRange(new Uint8Array([0]), new Uint8Array(64).fill(0xff))
    for await (const [k, v] of db.iterator()) {
      // sublevel keys are `!<name>!<key>`
      const text = Buffer.from(k).toString('latin1')
      const end = text.startsWith('!') ? text.indexOf('!', 1) : -1
      const name = end > 0 ? text.slice(1, end) : '(top level)'
      const c = collections.get(name) ?? { records: 0, bytes: 0 }
      c.records++
      c.bytes += k.byteLength + v.byteLength
      collections.set(name, c)
    }
  } finally {
    await db.close()
  }
  return { asWritten, compacted: await directoryBytes(root), collections }
}

/**
 * A copy of a running node's data directory, taken while the node is idle, measured as above (the
 * copy is removed after). LevelDB's files are written once, except its log and manifest, which it
 * replays at open: a copy taken between writes opens as the database was.
 */
export async function measureCopy (root: string, scratch: string): Promise<DiskFigures> {
  rmSync(scratch, { recursive: true, force: true })
  cpSync(root, scratch, { recursive: true, filter: (src) => !src.endsWith('LOCK') })
  try {
    return await measureDataDir(scratch)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
