/**
 * The node's DIDs on disk: one folder per DID under `<dataDir>/dids/<did>/` holding the public
 * files (exactly what the DID string hashes) and the private ones (sealed keys, pvtShare.png,
 * mnemonic.txt sealed like the key), plus an index record per DID in the `dids` collection of the KV store.
 *
 * A DID folder is written in a temporary folder and renamed into place, then indexed; a crash at
 * any step leaves either no DID or a whole one (stray temporary folders are removed at open).
 * Remote DIDs' public documents are cached under `<dataDir>/dids/.remote/`.
 */
import { randomUUID } from 'node:crypto'
import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Collection, KvStore } from '../../storage/kv-store.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { Lru } from '../../util/lru.js'
import { assertDid, isValidDid } from '../../wallet/did-string.js'
import { decodeDidDocument, DidFile, encodeDidDocument, PUBLIC_FILES, type DidDocument, type DidType } from '../../wallet/did-document.js'
import type { LocalDid } from '../../wallet/did-crypto.js'
import type { DidAnnouncement } from './announcement.js'
import { fileWriteError, syncDir, writeFileDurable, writeNewFileSynced } from '../../util/durable-write.js'

export interface DidRecord {
  did: string
  type: DidType
  createdAt: number
  publicFiles: string[]
  privateFiles: string[]
  /** The latest announcement of this DID made by this node (re-published at start). */
  announcement?: DidAnnouncement
}

const PRIVATE_NAMES = new Set<string>([DidFile.PVT_KEY, DidFile.PVT_SHARE, DidFile.QUORUM_PVT_KEY, DidFile.MNEMONIC])
const ALL_NAMES = new Set<string>(Object.values(DidFile))
const TMP_PREFIX = '.tmp-'
const REMOTE_DIR = '.remote'

function checkName (name: string): void {
  if (!ALL_NAMES.has(name)) throw new RbtError(ErrorCode.INVALID_INPUT, `unexpected DID file name ${JSON.stringify(name)}`)
}

/** Cached index entries before the cache starts over (a node meets many remote DIDs). */
const DID_CACHE_MAX = 10_000
/** Remote DID documents kept in memory. */
const REMOTE_DOC_CACHE_MAX = 1000

export class DidStore {
  private readonly index: Collection<DidRecord>
  private readonly remoteDir: string

  constructor (private readonly dir: string, private readonly kv: KvStore) {
    this.index = kv.collection<DidRecord>('dids')
    this.remoteDir = join(dir, REMOTE_DIR)
  }

  /** Creates the folders and removes leftovers of interrupted writes. */
  async open (): Promise<void> {
    await mkdir(this.remoteDir, { recursive: true })
    for (const name of await readdir(this.dir)) {
      if (name.startsWith(TMP_PREFIX)) await rm(join(this.dir, name), { recursive: true, force: true })
    }
  }

  private folder (did: string): string {
    return join(this.dir, assertDid(did))
  }

  async has (did: string): Promise<boolean> {
    return (await this.get(did)) !== undefined
  }

  /**
   * Index records by DID, absent ones included (null): every transfer asks several times whether
   * each party is local. Only this class writes the index, and it updates the cache as it does.
   */
  private readonly cache = new Map<string, DidRecord | null>()

  async get (did: string): Promise<DidRecord | undefined> {
    if (!isValidDid(did)) return undefined
    const hit = this.cache.get(did)
    if (hit !== undefined) return hit ?? undefined
    const writes = this.writes
    const rec = await this.index.get(did)
    // a read that overlapped a write may have seen the old record: answer it, do not keep it
    if (writes === this.writes) {
      if (this.cache.size >= DID_CACHE_MAX) this.cache.clear()
      this.cache.set(did, rec ?? null)
    }
    return rec
  }

  private writes = 0

  private async putRecord (did: string, rec: DidRecord): Promise<void> {
    this.writes++
    this.cache.delete(did)
    try {
      // a synced batch: the record of a DID whose creation was acknowledged survives a power loss
      await this.kv.batch([{ type: 'put', collection: 'dids', key: did, value: rec }], { sync: true })
    } finally {
      this.writes++
      this.cache.delete(did)
    }
  }

  async list (): Promise<DidRecord[]> {
    const out: DidRecord[] = []
    for await (const [, rec] of this.index.entries()) out.push(rec)
    return out.sort((a, b) => a.createdAt - b.createdAt)
  }

  /**
   * Stores a new DID. CONFLICT when the DID is already on this node (nothing is changed then).
   */
  async add (did: string, type: DidType, publicFiles: Record<string, Uint8Array>, privateFiles: Record<string, Uint8Array>, announcement?: DidAnnouncement): Promise<DidRecord> {
    assertDid(did)
    for (const n of [...Object.keys(publicFiles), ...Object.keys(privateFiles)]) checkName(n)
    for (const n of PUBLIC_FILES[type]) if (publicFiles[n] === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `DID files lack ${n}`)
    if (await this.has(did)) throw new RbtError(ErrorCode.CONFLICT, `DID ${did} already exists on this node`)
    const tmp = join(this.dir, TMP_PREFIX + randomUUID())
    await mkdir(tmp, { mode: 0o700 })
    try {
      for (const [n, b] of Object.entries(publicFiles)) await writeNewFileSynced(join(tmp, n), b)
      for (const [n, b] of Object.entries(privateFiles)) await writeNewFileSynced(join(tmp, n), b, { mode: 0o600 })
      const target = this.folder(did)
      // a folder without an index record is a leftover of a crash between rename and index
      await rm(target, { recursive: true, force: true })
      await syncDir(tmp)
      await rename(tmp, target)
      await syncDir(this.dir)
    } catch (e) {
      await rm(tmp, { recursive: true, force: true }).catch(() => {})
      throw fileWriteError(`the files of DID ${did}`, e)
    }
    const rec: DidRecord = {
      did,
      type,
      createdAt: Date.now(),
      publicFiles: Object.keys(publicFiles).sort(),
      privateFiles: Object.keys(privateFiles).sort(),
      ...(announcement !== undefined ? { announcement } : {})
    }
    try {
      await this.putRecord(did, rec)
    } catch (e) {
      await rm(this.folder(did), { recursive: true, force: true }).catch(() => {})
      throw e
    }
    return rec
  }

  async setAnnouncement (did: string, a: DidAnnouncement): Promise<void> {
    const rec = await this.index.get(did)
    if (rec === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `DID ${did} is not on this node`)
    await this.putRecord(did, { ...rec, announcement: a })
  }

  private async readFiles (did: string, names: string[]): Promise<Record<string, Uint8Array>> {
    const out: Record<string, Uint8Array> = {}
    for (const n of names) {
      checkName(n)
      out[n] = new Uint8Array(await readFile(join(this.folder(did), n)))
    }
    return out
  }

  /** The public document of a local DID. */
  async document (did: string): Promise<DidDocument | undefined> {
    const rec = await this.get(did)
    if (rec === undefined) return undefined
    return { did, type: rec.type, files: await this.readFiles(did, rec.publicFiles) }
  }

  /** Everything the signer needs for a local DID (keys still sealed). */
  async local (did: string): Promise<LocalDid | undefined> {
    const rec = await this.get(did)
    if (rec === undefined) return undefined
    const doc: DidDocument = { did, type: rec.type, files: await this.readFiles(did, rec.publicFiles) }
    const pvt = await this.readFiles(did, rec.privateFiles.filter((n) => PRIVATE_NAMES.has(n) && n !== DidFile.MNEMONIC))
    const local: LocalDid = { doc }
    if (pvt[DidFile.PVT_KEY] !== undefined) local.pvtKey = pvt[DidFile.PVT_KEY]
    if (pvt[DidFile.PVT_SHARE] !== undefined) local.pvtShare = pvt[DidFile.PVT_SHARE]
    if (pvt[DidFile.QUORUM_PVT_KEY] !== undefined) local.quorumKey = pvt[DidFile.QUORUM_PVT_KEY]
    return local
  }

  /** One private file of a local DID (e.g. the sealed mnemonic), or undefined when the DID has none. */
  async privateFile (did: string, name: string): Promise<Uint8Array | undefined> {
    checkName(name)
    if (!PRIVATE_NAMES.has(name)) throw new RbtError(ErrorCode.INVALID_INPUT, `${name} is not a private file`)
    const rec = await this.get(did)
    if (rec === undefined || !rec.privateFiles.includes(name)) return undefined
    return (await this.readFiles(did, [name]))[name]
  }

  /** Replaces a private file the DID already has (written beside it, synced, then renamed over it). */
  async replacePrivateFile (did: string, name: string, data: Uint8Array): Promise<void> {
    checkName(name)
    const rec = await this.get(did)
    if (rec === undefined || !rec.privateFiles.includes(name) || !PRIVATE_NAMES.has(name)) throw new RbtError(ErrorCode.NOT_FOUND, `DID ${did} has no ${name}`)
    const tmp = join(this.folder(did), TMP_PREFIX + randomUUID())
    try {
      await writeNewFileSynced(tmp, data, { mode: 0o600 })
      await rename(tmp, join(this.folder(did), name))
      await syncDir(this.folder(did))
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => {})
      throw fileWriteError(`${name} of DID ${did}`, e)
    }
  }

  // ---------------------------------------------------------------- remote documents

  private remotePath (did: string): string {
    return join(this.remoteDir, assertDid(did) + '.rdd')
  }

  /**
   * Remote documents read lately. A document hashes to its DID, so a cached one never goes stale;
   * a quorum reads the sender's for every PREPARE.
   */
  private readonly remoteDocs = new Lru<DidDocument>(REMOTE_DOC_CACHE_MAX)

  async remoteDocument (did: string): Promise<DidDocument | undefined> {
    const hit = this.remoteDocs.get(did)
    if (hit !== undefined) return hit
    try {
      const doc = decodeDidDocument(new Uint8Array(await readFile(this.remotePath(did))))
      this.keepRemote(doc)
      return doc
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      // a damaged cache entry is dropped and fetched again
      await rm(this.remotePath(did), { force: true }).catch(() => {})
      return undefined
    }
  }

  /** Caches a remote document (the caller has checked it against its DID). */
  async putRemoteDocument (doc: DidDocument): Promise<void> {
    await writeFileDurable(this.remotePath(doc.did), encodeDidDocument(doc))
    this.keepRemote(doc)
  }

  private keepRemote (doc: DidDocument): void {
    this.remoteDocs.set(doc.did, doc)
  }
}
