/**
 * Reading UnixFS DAGs back, from any block source (the blockstore, or bitswap fetching what is
 * missing): a file's bytes in order (`ipfs cat`), or a folder written out to disk (`ipfs get`).
 * Leaves are asked for ahead of the one being written, WINDOW at a time, so a fetch keeps the
 * peers busy; at most WINDOW blocks are held at once, whatever the file's size.
 */
import { mkdir, open, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import type { CID } from 'multiformats/cid'
import { leafData } from '../../tokenchain/unixfs-dag.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { onAbort } from '../deadline.js'
import { DAG_PB, RAW } from './blockstore.js'

/** Leaves asked for ahead of the one being written. */
export const WINDOW = 48

export interface BlockSource {
  get: (cid: CID, opts?: { signal?: AbortSignal }) => Promise<Uint8Array>
}

const bad = (cid: CID, what: string): RbtError => new RbtError(ErrorCode.VERIFICATION_FAILED, `block ${cid.toString()} ${what}`)

type Decoded = { kind: 'data', data: Uint8Array } | { kind: 'file', data?: Uint8Array, links: CID[] } | { kind: 'dir', links: Array<{ name: string, cid: CID }> }

function decode (cid: CID, block: Uint8Array): Decoded {
  if (cid.code === RAW) return { kind: 'data', data: block }
  if (cid.code !== DAG_PB) throw bad(cid, `has codec 0x${cid.code.toString(16)}, not UnixFS`)
  const fast = leafData(block)
  if (fast !== undefined) return { kind: 'data', data: fast }
  let node: dagPb.PBNode
  let fs: UnixFS
  try {
    node = dagPb.decode(block)
    fs = UnixFS.unmarshal(node.Data ?? new Uint8Array(0))
  } catch {
    throw bad(cid, 'is not a dag-pb UnixFS node')
  }
  if (fs.type === 'directory') {
    return { kind: 'dir', links: node.Links.map((l) => ({ name: l.Name ?? '', cid: l.Hash })) }
  }
  if (fs.type !== 'file' && fs.type !== 'raw') throw bad(cid, `is a UnixFS ${fs.type}, which is not read here`)
  if (node.Links.length === 0) return { kind: 'data', data: fs.data ?? new Uint8Array(0) }
  return { kind: 'file', ...(fs.data !== undefined && fs.data.length > 0 ? { data: fs.data } : {}), links: node.Links.map((l) => l.Hash) }
}

/** A file's bytes in order, piece by piece. */
export async function * catFile (source: BlockSource, root: CID, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Uint8Array> {
  // the nodes still to read, in file order; the first WINDOW are being fetched. An inner node is
  // replaced by its children where it stood, so the order holds at every depth.
  const queue: Array<{ cid: CID, block?: Promise<Uint8Array> }> = [{ cid: root }]
  // a reader that stops early withdraws the wants still out
  const ac = new AbortController()
  const outer = opts.signal
  const unlink = outer === undefined ? undefined : onAbort(outer, () => { ac.abort(outer.reason) })
  try {
    while (queue.length > 0) {
      for (let i = 0; i < Math.min(WINDOW, queue.length); i++) {
        const q = queue[i]
        if (q.block === undefined) {
          q.block = source.get(q.cid, { signal: ac.signal })
          q.block.catch(() => {}) // awaited in order below; an early failure must not go unhandled meanwhile
        }
      }
      const head = queue.shift()!
      const d = decode(head.cid, await head.block!)
      if (d.kind === 'dir') throw new RbtError(ErrorCode.INVALID_INPUT, `${root.toString()} is a folder, not a file`)
      if (d.kind === 'data') {
        if (d.data.length > 0) yield d.data
      } else {
        if (d.data !== undefined) yield d.data
        queue.unshift(...d.links.map((cid) => ({ cid })))
      }
    }
  } finally {
    queue.length = 0
    unlink?.()
    ac.abort(new RbtError(ErrorCode.NOT_RUNNING, 'the reader stopped'))
  }
}

/** A whole file in memory (small files; tests). */
export async function readWhole (source: BlockSource, root: CID, opts: { signal?: AbortSignal } = {}): Promise<Buffer> {
  const parts: Uint8Array[] = []
  for await (const p of catFile(source, root, opts)) parts.push(p)
  return Buffer.concat(parts)
}

/** Writes a file's bytes to `path` (through a temporary file renamed into place). */
export async function writeFile (source: BlockSource, root: CID, path: string, opts: { signal?: AbortSignal } = {}): Promise<number> {
  const tmp = `${path}.part`
  const fh = await open(tmp, 'w', 0o644)
  let size = 0
  try {
    for await (const piece of catFile(source, root, opts)) {
      await fh.write(piece)
      size += piece.length
    }
    await fh.sync()
    await fh.close()
    await rename(tmp, path)
    return size
  } catch (e) {
    await fh.close().catch(() => {})
    await rm(tmp, { force: true }).catch(() => {})
    throw e
  }
}

/**
 * `ipfs get`: a file written to `dest`, or a folder made at `dest` with its entries inside
 * (sub-folders included). Entry names must be plain names (no `/`, `.` or `..`).
 */
export async function getTree (source: BlockSource, root: CID, dest: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
  const block = await source.get(root, opts)
  const d = decode(root, block)
  if (d.kind !== 'dir') {
    await writeFile(source, root, dest, opts)
    return
  }
  await mkdir(dest, { recursive: true })
  for (const l of d.links) {
    if (l.name === '' || l.name.includes('/') || l.name === '.' || l.name === '..') throw bad(root, `names an entry ${JSON.stringify(l.name)}`)
    await getTree(source, l.cid, join(dest, l.name), opts)
  }
}
