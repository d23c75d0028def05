/**
 * DID string derivation. A Rubix DID is the CID that kubo v0.21 prints for
 * `ipfs add -r --cid-version=1 --hash=sha3-256 public/`: a UnixFS directory node (dag-pb)
 * whose links point at each public file, every block hashed with SHA3-256.
 *
 * File import rules reproduced here (kubo defaults once cid-version=1 is set):
 * raw leaves, fixed 262144-byte chunks, balanced DAG with at most 174 links per node.
 */
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { base32 } from 'multiformats/bases/base32'
import { RbtError, ErrorCode } from '../util/errors.js'
import { sha3 } from './bytes.js'

export const SHA3_256_CODE = 0x16
export const RAW_CODE = 0x55
export const DAG_PB_CODE = 0x70
export const CHUNK_SIZE = 262144
export const MAX_LINKS = 174
export const DID_PREFIX = 'bafybmi'
export const DID_LENGTH = 59

/** Root of an imported file or directory: its CID and the cumulative size of its DAG. */
export interface DagRoot {
  cid: CID
  /** Bytes of every block reachable from the root, as kubo reports in a parent's link Tsize. */
  tsize: number
}

function cidFor (code: number, block: Uint8Array): CID {
  return CID.createV1(code, Digest.create(SHA3_256_CODE, sha3(block)))
}

function pushVarint (out: number[], n: number): void {
  while (n >= 0x80) { out.push((n & 0x7f) | 0x80); n = Math.floor(n / 128) }
  out.push(n)
}

/** UnixFS `Data` message for a File node without inline data: Type, filesize, blocksizes. */
function unixfsFileData (fileSize: number, blockSizes: number[]): Uint8Array {
  const out: number[] = [0x08, 0x02, 0x18]
  pushVarint(out, fileSize)
  for (const b of blockSizes) { out.push(0x20); pushVarint(out, b) }
  return Uint8Array.from(out)
}

/** UnixFS `Data` for a plain directory: `{Type: Directory}`. */
const UNIXFS_DIRECTORY = Uint8Array.of(0x08, 0x01)

interface Built { cid: CID, tsize: number, dataSize: number }

/** CID (and DAG size) of one file as kubo imports it with the settings above. */
export function fileRoot (content: Uint8Array): DagRoot {
  const leaves: Built[] = []
  if (content.length <= CHUNK_SIZE) {
    return { cid: cidFor(RAW_CODE, content), tsize: content.length }
  }
  for (let o = 0; o < content.length; o += CHUNK_SIZE) {
    const chunk = content.subarray(o, Math.min(o + CHUNK_SIZE, content.length))
    leaves.push({ cid: cidFor(RAW_CODE, chunk), tsize: chunk.length, dataSize: chunk.length })
  }
  // Balanced layout: the first leaf starts as root; each round makes a new root whose
  // first child is the old root and fills the rest depth-first to `depth`.
  let next = 0
  const takeLeaf = (): Built => leaves[next++]!
  const makeNode = (children: Built[]): Built => {
    const node = dagPb.createNode(
      unixfsFileData(children.reduce((s, c) => s + c.dataSize, 0), children.map(c => c.dataSize)),
      children.map(c => dagPb.createLink('', c.tsize, c.cid))
    )
    const block = dagPb.encode(node)
    return {
      cid: cidFor(DAG_PB_CODE, block),
      tsize: block.length + children.reduce((s, c) => s + c.tsize, 0),
      dataSize: children.reduce((s, c) => s + c.dataSize, 0)
    }
  }
  const fill = (first: Built | null, depth: number): Built => {
    const children: Built[] = first === null ? [] : [first]
    while (children.length < MAX_LINKS && next < leaves.length) {
      children.push(depth === 1 ? takeLeaf() : fill(null, depth - 1))
    }
    return makeNode(children)
  }
  let root = takeLeaf()
  for (let depth = 1; next < leaves.length; depth++) root = fill(root, depth)
  return { cid: root.cid, tsize: root.tsize }
}

/** Compare two names byte-wise (UTF-8), the order dag-pb requires for links. */
function compareNames (a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

/**
 * The dag-pb block of the UnixFS directory over `files` (name → content).
 * Exposed for tests and for serving the DID folder over a content network.
 */
export function directoryBlock (files: Record<string, Uint8Array>): { block: Uint8Array, cid: CID, tsize: number } {
  const names = Object.keys(files).sort(compareNames)
  let childTotal = 0
  const links = names.map(name => {
    if (name.length === 0 || name.includes('/')) {
      throw new RbtError(ErrorCode.INVALID_INPUT, `invalid file name in DID folder: ${JSON.stringify(name)}`)
    }
    const content = files[name]
    if (!(content instanceof Uint8Array)) throw new RbtError(ErrorCode.INVALID_INPUT, `file ${name} must be bytes`)
    const r = fileRoot(content)
    childTotal += r.tsize
    return dagPb.createLink(name, r.tsize, r.cid)
  })
  const block = dagPb.encode(dagPb.createNode(UNIXFS_DIRECTORY, links))
  return { block, cid: cidFor(DAG_PB_CODE, block), tsize: block.length + childTotal }
}

/** The DID string for a set of public files (`bafybmi…`, 59 characters). */
export function didFromPublicFiles (files: Record<string, Uint8Array>): string {
  return directoryBlock(files).cid.toString(base32)
}

const BASE32_RE = /^b[a-z2-7]{58}$/

/** Shape check used across the reference: prefix `bafybmi`, 59 characters, base32 lowercase. */
export function isValidDid (s: unknown): s is string {
  return typeof s === 'string' && s.length === DID_LENGTH && s.startsWith(DID_PREFIX) && BASE32_RE.test(s)
}

export function assertDid (s: unknown): string {
  if (!isValidDid(s)) throw new RbtError(ErrorCode.INVALID_DID, `not a valid DID: ${String(s).slice(0, 80)}`)
  return s
}

/** The 32-byte SHA3-256 digest inside a DID. */
export function didDigest (did: string): Uint8Array {
  assertDid(did)
  const cid = CID.parse(did, base32)
  if (cid.multihash.code !== SHA3_256_CODE || cid.code !== DAG_PB_CODE) {
    throw new RbtError(ErrorCode.INVALID_DID, 'DID is not a dag-pb sha3-256 CID')
  }
  return cid.multihash.digest
}

/** Last hex digit of the DID's digest (stored as `did_last_char`, used for quorum selection). */
export function didLastChar (did: string): string {
  const d = didDigest(did)
  return (d[d.length - 1]! & 0x0f).toString(16)
}
