/**
 * Fetching an NFT artifact block by block (docs/protocol.md, "Artifact blocks"): the DAG's root
 * and inner nodes first, then the 256 KiB leaves from every holder at once. Each block is checked
 * against the CID it was asked for (sha2-256 of the block = the CID's digest, and the leaf's size
 * the one its parent names) before its bytes are written at their offset in a partial file. Which
 * leaves are on disk is kept next to it (synced after the data), so a fetch cut short by a restart
 * or by losing its peers goes on where it stopped. A peer that sends a wrong block is passed over
 * for the rest of the fetch and counted. At most one block per request in flight is in memory.
 */
import { mkdir, open, readFile, rm, stat, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { CHUNK_SIZE, blockMatchesCid, decodeInnerNode, hasLinks, leafData } from '../../tokenchain/unixfs-dag.js'
import { fileWriteError, writeFileDurable } from '../../util/durable-write.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { silentLogger, type Logger } from '../../util/logger.js'
import { MAX_BLOCKS_PER_REQUEST } from './artifact-blocks.js'
import { BufferPool } from '../../util/buffer-pool.js'
import { DirectWrites } from '../../util/direct-writes.js'

/** One holder of the artifact: the blocks asked for, in order (it may stop early or fail). */
export interface BlockSource {
  peer: string
  /** `into`, when given, gives the buffer a block page that arrived in pieces is joined into. */
  blocks: (cids: string[], into?: (bytes: number) => Uint8Array) => AsyncIterable<{ cid: string, block: Uint8Array }>
}

export interface ArtifactFetchResult {
  /** the whole artifact, checked (in the fetch folder: the caller moves it into place) */
  path: string
  cid: string
  size: number
  /** the DAG's inner nodes (the NFT's DAG index) */
  inner: Uint8Array[]
  /** leaves written by this run, and those found on disk from an earlier one */
  blocks: number
  resumed: number
  /** leaves written per peer in this run */
  perPeer: Record<string, number>
  /** wrong blocks per peer (each such peer was passed over) */
  rejected: Record<string, number>
}

export interface ArtifactFetchOptions {
  cid: string
  /** the fetch's own folder (kept across restarts until the fetch completes) */
  dir: string
  sources: BlockSource[]
  /** leaves per request (default 16) and requests in flight per peer (default 2) */
  batch?: number
  perPeer?: number
  /** leaves of one request being written to disk at once while the next arrive (default 4) */
  writesPerRequest?: number
  /** progress is synced to disk after this many leaves (default 64), in the background */
  syncEvery?: number
  /** how the partial file's data is made durable (default its `datasync`; tests hold it to see the fetch go on) */
  syncData?: (fh: FileHandle) => Promise<void>
  log?: Logger
}

interface Leaf { cid: string, size: number }

const PART_FILE = 'artifact.part'
const DONE_FILE = 'done'
const META_FILE = 'meta.json'
/** consecutive failures (unreachable, timeout) after which a peer is left out of the fetch */
const MAX_PEER_FAILURES = 2
/** a leaf's page: the leaf (one chunk and its few bytes of framing) and the frame's header */
const PAGE_POOL_BYTES = CHUNK_SIZE + 4096
/** page buffers kept free for reuse (about 8 MiB): more than the pages of four requests in flight and their writes */
const PAGE_POOL_KEEP = 32
/** leaves being written around the page cache at once (4 MiB of aligned slots); more go the ordinary way */
const DIRECT_SLOTS = 16

class PeerTally {
  readonly perPeer: Record<string, number> = {}
  readonly rejected: Record<string, number> = {}
  readonly passedOver = new Set<string>()
  readonly errors: string[] = []
  reject (peer: string, why: string): void {
    this.rejected[peer] = (this.rejected[peer] ?? 0) + 1
    this.passedOver.add(peer)
    this.errors.push(`${peer.slice(0, 12)}…: sent a wrong block (${why})`)
  }
}

class WrongBlock extends Error {}
/** This node's own disk failed (full, I/O error): the fetch stops, whatever the peers. */
class LocalFailure extends Error {}

/** Fetches the DAG's structure: the root, then each level of inner nodes; gives the leaves in file order. */
async function fetchStructure (cid: string, sources: BlockSource[], tally: PeerTally): Promise<{ inner: Uint8Array[], leaves: Leaf[], rootLeaf?: Uint8Array }> {
  const getMany = async (cids: string[]): Promise<Uint8Array[]> => {
    const errors: string[] = []
    for (const s of sources) {
      if (tally.passedOver.has(s.peer)) continue
      try {
        const out: Uint8Array[] = []
        for await (const b of s.blocks(cids)) {
          const want = cids[out.length]
          if (b.cid !== want || !blockMatchesCid(want, b.block)) { tally.reject(s.peer, `not block ${want}`); throw new WrongBlock() }
          out.push(b.block)
          if (out.length === cids.length) break
        }
        if (out.length === cids.length) return out
        errors.push(`${s.peer.slice(0, 12)}…: answered ${out.length} of ${cids.length} blocks`)
      } catch (e) {
        if (!(e instanceof WrongBlock)) errors.push(`${s.peer.slice(0, 12)}…: ${errorMessage(e)}`)
      }
    }
    throw new RbtError(ErrorCode.NOT_FOUND, `no peer served the artifact's DAG: ${[...errors, ...tally.errors].join('; ') || 'no peer holds it'}`)
  }
  const [root] = await getMany([cid])
  if (!hasLinks(root)) {
    const data = leafData(root)
    if (data === undefined) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `artifact ${cid} is not a UnixFS file`)
    return { inner: [], leaves: [{ cid, size: data.length }], rootLeaf: root }
  }
  const inner: Uint8Array[] = []
  let level: Uint8Array[] = [root]
  for (;;) {
    inner.push(...level)
    const children = level.flatMap((n) => decodeInnerNode(n).links)
    // every level of a balanced DAG is of one kind: the first child tells whether they are leaves
    const [first] = await getMany([children[0].cid])
    if (!hasLinks(first)) {
      // the root last, as the builder gives them
      return { inner: inner.reverse(), leaves: children.map((l) => ({ cid: l.cid, size: l.size })) }
    }
    const next: Uint8Array[] = [first]
    for (let i = 1; i < children.length; i += MAX_BLOCKS_PER_REQUEST) next.push(...await getMany(children.slice(i, i + MAX_BLOCKS_PER_REQUEST).map((c) => c.cid)))
    level = next
  }
}

/** Checks the leaves are in the `ipfs add` layout (every leaf a full chunk but the last); gives the file size. */
function layoutSize (cid: string, leaves: Leaf[]): number {
  let size = 0
  leaves.forEach((l, i) => {
    if (l.size > CHUNK_SIZE || (i < leaves.length - 1 && l.size !== CHUNK_SIZE)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `artifact ${cid}: its DAG is not in the 256 KiB layout of ipfs add`)
    size += l.size
  })
  return size
}

/** The leaves found on disk by an earlier run of the same fetch (none when it fetched something else). */
async function loadProgress (dir: string, cid: string, count: number): Promise<Uint8Array> {
  try {
    const meta = JSON.parse(await readFile(join(dir, META_FILE), 'utf8')) as { cid?: string, leaves?: number }
    const done = new Uint8Array(await readFile(join(dir, DONE_FILE)))
    if (meta.cid === cid && meta.leaves === count && done.length === count) return done
  } catch { /* nothing usable: start afresh */ }
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true })
  await writeFileDurable(join(dir, META_FILE), JSON.stringify({ cid, leaves: count }))
  const fresh = new Uint8Array(count)
  await writeFileDurable(join(dir, DONE_FILE), fresh)
  return fresh
}

export async function fetchArtifact (o: ArtifactFetchOptions): Promise<ArtifactFetchResult> {
  const log = o.log ?? silentLogger
  const batchSize = o.batch ?? 16
  const perPeer = o.perPeer ?? 2
  // Each request in flight holds up to a batch of leaves in the node's memory (arrived, being
  // joined, waiting for their write), and each runs on a stream of its own: two per peer kept the
  // fetching node's growth under 64 MiB over 1 GiB where four went past 70, at the same rate. No
  // cap over all peers: slow holders would keep its slots and starve the fast ones.
  const writesPerRequest = Math.max(1, o.writesPerRequest ?? 4)
  const syncEvery = o.syncEvery ?? 64
  const tally = new PeerTally()
  await mkdir(o.dir, { recursive: true })
  const { inner, leaves, rootLeaf } = await fetchStructure(o.cid, o.sources, tally)
  const size = layoutSize(o.cid, leaves)
  const done = await loadProgress(o.dir, o.cid, leaves.length)
  const resumed = done.reduce((n, d) => n + d, 0)
  const path = join(o.dir, PART_FILE)
  const fh: FileHandle = await open(path, 'a+').then(async (h) => { await h.close(); return await open(path, 'r+') })
  const syncData = o.syncData ?? (async (h: FileHandle): Promise<void> => { await h.datasync() })
  // the leaves go around the page cache where they can: the pages the kernel finds for a file
  // written once cost more than the write itself on a virtual machine (decision 0031); the datasync
  // of `fh` covers both kinds of write
  const leafWrites = await DirectWrites.open(path, fh, { slotBytes: CHUNK_SIZE, slots: DIRECT_SLOTS })
  let written = 0
  let sinceSync = 0
  let syncing: Promise<void> | undefined
  let fatal: unknown
  // The data reaches the disk before the record that says it is there: the record is the leaves
  // whose writes had completed when the data sync began (a sync covers every write completed
  // before it). One sync at a time, in the background: the fetch goes on meanwhile, so the disk
  // flushes while the network brings the next leaves (a fetch that waited on each sync left the
  // pipe empty for as long as the disk took to write the last 16 MiB).
  const sync = async (): Promise<void> => {
    sinceSync = 0
    const snapshot = Uint8Array.from(done)
    await syncData(fh)
    await writeFileDurable(join(o.dir, DONE_FILE), snapshot)
  }
  const syncInBackground = (): void => {
    if (syncing !== undefined) return
    syncing = sync().catch((e: unknown) => { fatal ??= e }).finally(() => { syncing = undefined })
  }
  const persist = async (): Promise<void> => {
    while (syncing !== undefined) await syncing
    if (fatal !== undefined) throw fatal
    await sync()
  }
  try {
    if ((await fh.stat()).size !== size) await fh.truncate(size)
    if (rootLeaf !== undefined && done[0] !== 1) {
      const data = leafData(rootLeaf)!
      await fh.write(data, 0, data.length, 0)
      done[0] = 1
      written++
    }
    const queue: number[] = []
    for (let i = leaves.length - 1; i >= 0; i--) if (done[i] !== 1) queue.push(i)
    let inflight = 0
    let wake: (() => void) | undefined
    let changed = new Promise<void>((resolve) => { wake = resolve })
    const notify = (): void => { const w = wake; changed = new Promise<void>((resolve) => { wake = resolve }); w?.() }

    // the leaves' pages are joined into buffers used again once their write is done (a page
    // joined into a new buffer each time was a third of what the fetch allocates outside V8's heap)
    const pages = new BufferPool(PAGE_POOL_BYTES, PAGE_POOL_KEEP)
    const pageInto = (bytes: number): Uint8Array => pages.take(bytes)
    const worker = async (s: BlockSource): Promise<void> => {
      let failures = 0
      const stopped = (): boolean => tally.passedOver.has(s.peer) || fatal !== undefined
      for (;;) {
        if (stopped()) return
        const batch = queue.splice(Math.max(0, queue.length - batchSize)).reverse()
        if (batch.length === 0) {
          if (inflight === 0) return
          await changed
          continue
        }
        inflight += batch.length
        // blocks checked and handed to the disk; their writes run while the next blocks arrive
        let got = 0
        const writes = new Set<Promise<void>>()
        const settle = async (): Promise<void> => { while (writes.size > 0) await Promise.all([...writes]) }
        try {
          try {
            for await (const b of s.blocks(batch.map((i) => leaves[i].cid), pageInto)) {
              const i = batch[got]
              const leaf = leaves[i]
              if (b.cid !== leaf.cid || !blockMatchesCid(leaf.cid, b.block)) { pages.give(b.block); tally.reject(s.peer, `not block ${leaf.cid}`); throw new WrongBlock() }
              const data = leafData(b.block)
              if (data === undefined || data.length !== leaf.size) { pages.give(b.block); tally.reject(s.peer, `block ${leaf.cid} is not a leaf of ${leaf.size} bytes`); throw new WrongBlock() }
              got++
              // the page's buffer serves the next page once the leaf is copied or written
              const w: Promise<void> = leafWrites.write(data, i * CHUNK_SIZE, () => { pages.give(b.block) }).then(() => {
                done[i] = 1
                inflight--
                written++
                sinceSync++
                tally.perPeer[s.peer] = (tally.perPeer[s.peer] ?? 0) + 1
              }, (e: unknown) => { fatal ??= e }).finally(() => {
                writes.delete(w)
              })
              writes.add(w)
              if (writes.size >= writesPerRequest) await Promise.race(writes)
              if (fatal !== undefined) throw new LocalFailure()
              if (sinceSync >= syncEvery) syncInBackground()
              if (got === batch.length) break
            }
          } finally {
            // what was handed to the disk is either written (and counted) or fatal
            await settle()
          }
          if (fatal !== undefined) throw new LocalFailure()
          if (got < batch.length) throw new Error(`answered ${got} of ${batch.length} blocks`)
          failures = 0
        } catch (e) {
          const rest = batch.slice(got)
          inflight -= rest.length
          queue.push(...rest.reverse())
          // a block whose write failed is not on disk: it goes back to the queue too (the fetch stops anyway)
          for (const i of batch.slice(0, got)) if (done[i] !== 1) { inflight--; queue.push(i) }
          if (!(e instanceof WrongBlock) && !(e instanceof LocalFailure)) {
            tally.errors.push(`${s.peer.slice(0, 12)}…: ${errorMessage(e)}`)
            if (++failures >= MAX_PEER_FAILURES) tally.passedOver.add(s.peer)
            log.debug(`artifact ${o.cid}: peer ${s.peer}: ${errorMessage(e)}`)
          }
        } finally {
          notify()
        }
      }
    }
    await Promise.all(o.sources.flatMap((s) => Array.from({ length: perPeer }, async () => { await worker(s) })))
    if (fatal !== undefined) throw fileWriteError('the NFT artifact being fetched', fatal)
    await persist().catch((e) => { throw fileWriteError('the NFT artifact being fetched', e) })
    const missing = done.length - done.reduce((n, d) => n + d, 0)
    if (missing > 0) {
      throw new RbtError(ErrorCode.NOT_FOUND, `artifact ${o.cid}: ${missing} of ${leaves.length} blocks still missing (kept: the next fetch goes on from here): ${tally.errors.slice(-6).join('; ') || 'no peer holds it'}`)
    }
    await fh.sync()
  } finally {
    while (syncing !== undefined) await syncing
    await leafWrites.close()
    await fh.close()
  }
  if ((await stat(path)).size !== size) throw new RbtError(ErrorCode.STORAGE, `artifact ${o.cid}: the partial file has the wrong size`)
  return { path, cid: o.cid, size, inner, blocks: written, resumed, perPeer: tally.perPeer, rejected: tally.rejected }
}

/** Removes a fetch's folder (after its artifact was moved into place). */
export async function removeFetch (dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true })
}

/** The progress kept in a fetch folder: leaves on disk (as last synced) and their number. */
export async function fetchProgress (dir: string): Promise<{ done: number, total: number } | undefined> {
  try {
    const done = new Uint8Array(await readFile(join(dir, DONE_FILE)))
    return { done: done.reduce((n, d) => n + d, 0), total: done.length }
  } catch { return undefined }
}

