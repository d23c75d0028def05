/**
 * Content blocks on disk, as Kubo keeps them: one file per block, named by the block's multihash
 * (so a CIDv0 and a CIDv1 of the same bytes are one block), in 2-character shard folders, under
 * the node's data dir (`<data dir>/blocks/`).
 *
 * Every block is checked against its CID when it comes in (`put` refuses a block whose digest
 * differs) and again when it is read: blocks are written to a temporary file and renamed into
 * place without a sync each (a 256 MiB file is 1,024 blocks), so a block cut short by a crash is
 * found on read, removed and reported absent, never served.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { base32 } from 'multiformats/bases/base32'
import { create as createDigest } from 'multiformats/hashes/digest'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'

export const SHA2_256 = 0x12
export const SHA2_512 = 0x13
export const SHA3_512 = 0x14
export const SHA3_256 = 0x16
export const IDENTITY = 0x00
export const DAG_PB = 0x70
export const RAW = 0x55

const HASHES: Record<number, string> = { [SHA2_256]: 'sha256', [SHA2_512]: 'sha512', [SHA3_256]: 'sha3-256', [SHA3_512]: 'sha3-512' }

/** The digest of `bytes` under multihash code `code`; undefined for a hash we do not know. */
export function digestOf (code: number, bytes: Uint8Array): Uint8Array | undefined {
  if (code === IDENTITY) return bytes
  const alg = HASHES[code]
  if (alg === undefined) return undefined
  return createHash(alg).update(bytes).digest()
}

/** The CID of `bytes` under a CID's shape (version, codec, hash). */
export function cidFor (version: 0 | 1, codec: number, hashCode: number, bytes: Uint8Array): CID {
  const d = digestOf(hashCode, bytes)
  if (d === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `unsupported multihash 0x${hashCode.toString(16)}`)
  const mh = createDigest(hashCode, d)
  return version === 0 ? CID.createV0(mh as Parameters<typeof CID.createV0>[0]) : CID.createV1(codec, mh)
}

/** Whether `bytes` hash to the digest `cid` names. */
export function blockMatches (cid: CID, bytes: Uint8Array): boolean {
  const d = digestOf(cid.multihash.code, bytes)
  return d !== undefined && d.length === cid.multihash.digest.length && Buffer.from(d).equals(cid.multihash.digest)
}

export function parseCid (cid: string | CID): CID {
  if (typeof cid !== 'string') return cid
  try {
    return CID.parse(cid)
  } catch (e) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `invalid CID "${cid.slice(0, 80)}": ${errorMessage(e)}`)
  }
}

export interface Blockstore {
  has: (cid: CID) => Promise<boolean>
  /** The block's bytes, or undefined when it is not held (or was found damaged and removed). */
  get: (cid: CID) => Promise<Uint8Array | undefined>
  /**
   * Stores a block after checking it against `cid` (VERIFICATION_FAILED when it does not match);
   * `verified` skips the check for a caller that built `cid` from these very bytes.
   */
  put: (cid: CID, bytes: Uint8Array, opts?: { verified?: boolean }) => Promise<void>
  delete: (cid: CID) => Promise<void>
}

export class FsBlockstore implements Blockstore {
  private readonly made = new Set<string>()
  private readonly listeners = new Set<(cid: CID) => void>()

  constructor (readonly dir: string) {}

  /** Registers a listener for newly stored blocks; returns its removal. */
  onPut (fn: (cid: CID) => void): () => void {
    this.listeners.add(fn)
    return () => { this.listeners.delete(fn) }
  }

  /** The file of a block: its multihash in base32, sharded by the two characters before the last. */
  pathOf (cid: CID): { shard: string, file: string } {
    const key = base32.baseEncode(cid.multihash.bytes).toUpperCase()
    const shardName = key.slice(-3, -1)
    const shard = join(this.dir, shardName)
    return { shard, file: join(shard, `${key}.data`) }
  }

  async has (cid: CID): Promise<boolean> {
    if (cid.multihash.code === IDENTITY) return true
    try {
      await stat(this.pathOf(cid).file)
      return true
    } catch {
      return false
    }
  }

  async get (cid: CID): Promise<Uint8Array | undefined> {
    if (cid.multihash.code === IDENTITY) return cid.multihash.digest
    const { file } = this.pathOf(cid)
    let bytes: Buffer
    try {
      bytes = await readFile(file)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw new RbtError(ErrorCode.STORAGE, `cannot read block ${cid.toString()}: ${errorMessage(e)}`)
    }
    if (!blockMatches(cid, bytes)) {
      await rm(file, { force: true }).catch(() => {})
      return undefined
    }
    return bytes
  }

  async put (cid: CID, bytes: Uint8Array, opts: { verified?: boolean } = {}): Promise<void> {
    if (opts.verified !== true && !blockMatches(cid, bytes)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `a block does not match its CID ${cid.toString()}`)
    if (cid.multihash.code === IDENTITY) return
    const { shard, file } = this.pathOf(cid)
    // a block fetched was wanted, so not held: no look first (a rename over a copy is harmless)
    if (opts.verified !== true && await this.has(cid)) return
    if (!this.made.has(shard)) {
      await mkdir(shard, { recursive: true })
      this.made.add(shard)
    }
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`
    try {
      await writeFile(tmp, bytes)
      await rename(tmp, file)
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => {})
      const code = (e as NodeJS.ErrnoException).code
      throw new RbtError(code === 'ENOSPC' ? ErrorCode.INSUFFICIENT_STORAGE : ErrorCode.STORAGE, `cannot store block ${cid.toString()}: ${errorMessage(e)}`)
    }
    for (const l of this.listeners) l(cid)
  }

  async delete (cid: CID): Promise<void> {
    await rm(this.pathOf(cid).file, { force: true })
  }
}
