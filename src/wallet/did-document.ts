/**
 * DID types, file names and the public DID document: the public files a remote node needs
 * to verify a DID's signatures, plus a compact binary encoding for moving it around.
 */
import { RbtError, ErrorCode } from '../util/errors.js'
import { assertDid, didFromPublicFiles } from './did-string.js'

export const DidType = { BASIC: 0, STANDARD: 1, WALLET: 2, CHILD: 3, LITE: 4 } as const
export type DidType = typeof DidType[keyof typeof DidType]

export function isDidType (v: unknown): v is DidType {
  return v === 0 || v === 1 || v === 2 || v === 3 || v === 4
}

export function assertDidType (v: unknown): DidType {
  if (!isDidType(v)) throw new RbtError(ErrorCode.INVALID_INPUT, `DID type must be 0..4, got ${String(v)}`)
  return v
}

export const DidFile = {
  IMAGE: 'image.png',
  DID_IMAGE: 'did.png',
  PVT_SHARE: 'pvtShare.png',
  PUB_SHARE: 'pubShare.png',
  PVT_KEY: 'pvtKey.pem',
  PUB_KEY: 'pubKey.pem',
  QUORUM_PVT_KEY: 'quorumPrivKey.pem',
  QUORUM_PUB_KEY: 'quorumPubKey.pem',
  MASTER: 'master.txt',
  MNEMONIC: 'mnemonic.txt'
} as const

/** Public files each type must have (they are exactly what the DID string hashes). */
export const PUBLIC_FILES: Record<DidType, readonly string[]> = {
  0: [DidFile.DID_IMAGE, DidFile.PUB_SHARE, DidFile.PUB_KEY, DidFile.QUORUM_PUB_KEY],
  1: [DidFile.DID_IMAGE, DidFile.PUB_SHARE, DidFile.PUB_KEY, DidFile.QUORUM_PUB_KEY],
  2: [DidFile.DID_IMAGE, DidFile.PUB_SHARE, DidFile.PUB_KEY, DidFile.QUORUM_PUB_KEY],
  3: [DidFile.PUB_KEY, DidFile.MASTER],
  4: [DidFile.PUB_KEY]
}

/** What a verifier needs to know about a DID: its type and its public files. */
export interface DidDocument {
  did: string
  type: DidType
  /** Public files by name (did.png, pubShare.png, pubKey.pem, quorumPubKey.pem, master.txt). */
  files: Record<string, Uint8Array>
  /** For a child DID (type 3): the master DID's document, whose images it uses. */
  master?: DidDocument
}

/**
 * Check that a document is internally consistent: the files the type needs are present and
 * hash to the claimed DID. Throws VERIFICATION_FAILED otherwise.
 */
export function checkDidDocument (doc: DidDocument): void {
  assertDid(doc.did)
  assertDidType(doc.type)
  for (const name of PUBLIC_FILES[doc.type]) {
    if (!(doc.files[name] instanceof Uint8Array)) {
      throw new RbtError(ErrorCode.VERIFICATION_FAILED, `DID ${doc.did} (type ${doc.type}) lacks ${name}`)
    }
  }
  if (didFromPublicFiles(doc.files) !== doc.did) {
    throw new RbtError(ErrorCode.VERIFICATION_FAILED, `public files do not hash to DID ${doc.did}`)
  }
  if (doc.type === DidType.CHILD) {
    if (doc.master === undefined) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'child DID document lacks its master')
    const named = Buffer.from(doc.files[DidFile.MASTER]!).toString('utf8').trim()
    if (named !== doc.master.did) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'master.txt does not name the given master DID')
    checkDidDocument(doc.master)
  }
}

// Binary layout: "RDD1" | type u8 | did (59 ASCII) | count u8 | (nameLen u8, name, len u32 BE, bytes)* | hasMaster u8 | master…
const DOC_MAGIC = 'RDD1'
const MAX_FILE = 8 * 1024 * 1024

export function encodeDidDocument (doc: DidDocument): Uint8Array {
  const parts: Buffer[] = [Buffer.from(DOC_MAGIC, 'latin1'), Buffer.of(assertDidType(doc.type)), Buffer.from(assertDid(doc.did), 'latin1')]
  const names = Object.keys(doc.files).sort()
  if (names.length > 255) throw new RbtError(ErrorCode.INVALID_INPUT, 'too many files in DID document')
  parts.push(Buffer.of(names.length))
  for (const name of names) {
    const n = Buffer.from(name, 'utf8')
    if (n.length === 0 || n.length > 255) throw new RbtError(ErrorCode.INVALID_INPUT, `bad file name ${name}`)
    const f = doc.files[name]!
    const len = Buffer.alloc(4); len.writeUInt32BE(f.length)
    parts.push(Buffer.of(n.length), n, len, Buffer.from(f.buffer, f.byteOffset, f.byteLength))
  }
  if (doc.master !== undefined) parts.push(Buffer.of(1), Buffer.from(encodeDidDocument(doc.master)))
  else parts.push(Buffer.of(0))
  return new Uint8Array(Buffer.concat(parts))
}

export function decodeDidDocument (bytes: Uint8Array): DidDocument {
  const r = decodeAt(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0, 0)
  if (r.end !== bytes.length) throw new RbtError(ErrorCode.INVALID_INPUT, 'trailing bytes after DID document')
  return r.doc
}

function decodeAt (b: Buffer, off: number, depth: number): { doc: DidDocument, end: number } {
  const bad = (m: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, `malformed DID document: ${m}`)
  const need = (n: number): void => { if (off + n > b.length) throw bad('truncated') }
  if (depth > 1) throw bad('nested too deeply')
  need(4 + 1 + 59 + 1)
  if (b.toString('latin1', off, off + 4) !== DOC_MAGIC) throw bad('bad magic')
  off += 4
  const type = assertDidType(b[off++])
  const did = assertDid(b.toString('latin1', off, off + 59)); off += 59
  const count = b[off++]!
  const files: Record<string, Uint8Array> = {}
  for (let i = 0; i < count; i++) {
    need(1); const nl = b[off++]!
    need(nl + 4); const name = b.toString('utf8', off, off + nl); off += nl
    const len = b.readUInt32BE(off); off += 4
    if (len > MAX_FILE) throw bad('file too large')
    need(len); files[name] = new Uint8Array(b.subarray(off, off + len)); off += len
  }
  need(1)
  const hasMaster = b[off++]
  const doc: DidDocument = { did, type, files }
  if (hasMaster === 1) {
    const m = decodeAt(b, off, depth + 1)
    doc.master = m.doc; off = m.end
  } else if (hasMaster !== 0) throw bad('bad master flag')
  return { doc, end: off }
}
