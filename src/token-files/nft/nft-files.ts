/**
 * NFT files, content-addressed. An NFT is three documents and two files:
 *   manifest  = indented JSON {Metadata: CID(metadata), Artifact: CID(artifact), ArtifactName}
 *   ArtifactHash = CID(manifest)
 *   descriptor (nft.json) = indented JSON {DID, ArtifactHash}; the NFT id is CID(descriptor)
 * so anyone holding the id can check every byte fetched from a peer. Files live under
 * `<data dir>/nft/<nft id>/`, written into a temporary folder and renamed into place. Next to them,
 * `.dag` holds the inner nodes of the artifact's UnixFS DAG (artifact-file.ts), so the artifact is
 * served block by block; an artifact arrives as a file already written (an upload or a fetch) and
 * is moved in, never read into memory.
 */
import { open, readdir, readFile, rm, stat } from 'node:fs/promises'
import { writeFolderAtomically, type MovedFile } from '../folder-write.js'
import { join } from 'node:path'
import { writeFileDurable } from '../../util/durable-write.js'
import { UPLOAD_PREFIX, dagOfFile, encodeDagIndex, readDagIndex, type ArtifactUpload } from './artifact-file.js'
import { cidV0ForContent, goIndentedJson, isCidV0, nftTokenId } from '../../tokenchain/token-id.js'
import { ErrorCode, RbtError } from '../../util/errors.js'

export type NftPart = 'nft' | 'manifest' | 'metadata' | 'artifact'
export const NFT_PARTS: readonly NftPart[] = ['nft', 'manifest', 'metadata', 'artifact']

export interface NftManifest { metadata: string, artifact: string, artifactName: string }

const FILE_OF: Record<Exclude<NftPart, 'artifact'>, string> = { nft: 'nft.json', manifest: 'manifest.json', metadata: 'metadata.json' }
/** The artifact's DAG index in the NFT's folder (a name no artifact can take: they never start with a dot). */
export const DAG_INDEX_FILE = '.dag'
/** Pages of an artifact served in the `nft.part` way, read from the file one at a time. */
const ARTIFACT_PAGE_BYTES = 256 * 1024
const SAFE_NAME = /^[A-Za-z0-9._ -]{1,128}$/

/**
 * The names of the NFT's own files: an artifact of one of these names would overwrite them in the
 * NFT's folder. Compared case-insensitively (and ignoring trailing dots and spaces, which some file
 * systems drop), so no spelling reaches the same file.
 */
export const RESERVED_ARTIFACT_NAMES: readonly string[] = Object.values(FILE_OF)

export function isReservedArtifactName (name: string): boolean {
  const n = name.trim().replace(/[. ]+$/, '').toLowerCase()
  return RESERVED_ARTIFACT_NAMES.includes(n)
}

const reservedMessage = (name: string): string =>
  `the artifact name ${JSON.stringify(name)} is reserved for the NFT's own files (${RESERVED_ARTIFACT_NAMES.join(', ')}, in any case)`

export function manifestText (m: NftManifest): string {
  return goIndentedJson([['Metadata', m.metadata], ['Artifact', m.artifact], ['ArtifactName', m.artifactName]])
}

export function parseManifest (text: string): NftManifest {
  let raw: unknown
  try { raw = JSON.parse(text) } catch { throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'NFT manifest is not JSON') }
  const r = raw as Record<string, unknown>
  if (typeof r?.Metadata !== 'string' || typeof r.Artifact !== 'string' || typeof r.ArtifactName !== 'string' || !SAFE_NAME.test(r.ArtifactName) || r.ArtifactName.startsWith('.')) {
    throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'NFT manifest is malformed')
  }
  if (isReservedArtifactName(r.ArtifactName)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `NFT manifest refused: ${reservedMessage(r.ArtifactName)}`)
  return { metadata: r.Metadata, artifact: r.Artifact, artifactName: r.ArtifactName }
}

export function parseDescriptor (text: string): { did: string, artifactHash: string } {
  let raw: unknown
  try { raw = JSON.parse(text) } catch { throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'NFT descriptor is not JSON') }
  const r = raw as Record<string, unknown>
  if (typeof r?.DID !== 'string' || typeof r.ArtifactHash !== 'string') throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'NFT descriptor is malformed')
  return { did: r.DID, artifactHash: r.ArtifactHash }
}

/** A plain file name for the artifact (never a path); a name of the NFT's own files is refused (INVALID_INPUT). */
export function artifactFileName (name: string | undefined): string {
  const n = (name ?? '').trim()
  if (isReservedArtifactName(n)) throw new RbtError(ErrorCode.INVALID_INPUT, `Creation of NFT failed: ${reservedMessage(n)}`)
  return SAFE_NAME.test(n) && !n.startsWith('.') ? n : 'artifact'
}

export interface NftFiles {
  nftId: string
  did: string
  artifactHash: string
  manifest: NftManifest
  folder: string
}

export class NftFileStore {
  constructor (readonly dir: string) {}

  folder (nftId: string): string {
    if (!isCidV0(nftId)) throw new RbtError(ErrorCode.INVALID_INPUT, `NFT id ${JSON.stringify(nftId)} is not a CID (Qm…)`)
    return join(this.dir, nftId)
  }

  async has (nftId: string): Promise<boolean> {
    try { return (await stat(join(this.folder(nftId), FILE_OF.nft))).isFile() } catch { return false }
  }

  /** Stores an NFT created by `did`; the same inputs always give the same id. */
  async create (did: string, metadata: Uint8Array, artifact: Uint8Array, name: string): Promise<NftFiles> {
    const manifest: NftManifest = { metadata: cidV0ForContent(metadata), artifact: cidV0ForContent(artifact), artifactName: artifactFileName(name) }
    const { nftId, artifactHash, descriptor, mText } = ids(did, manifest)
    if (!await this.has(nftId)) await this.write(nftId, { nft: descriptor, manifest: mText, metadata, artifact, artifactName: manifest.artifactName })
    return { nftId, did, artifactHash, manifest, folder: this.folder(nftId) }
  }

  /**
   * Stores an NFT whose artifact was uploaded to a temporary file (ArtifactWriter): the file is
   * moved into the NFT's folder, or removed when the NFT is held already or storing fails.
   */
  async createFromUpload (did: string, metadata: Uint8Array, upload: ArtifactUpload, name: string): Promise<NftFiles> {
    try {
      const manifest: NftManifest = { metadata: cidV0ForContent(metadata), artifact: upload.cid, artifactName: artifactFileName(name) }
      const { nftId, artifactHash, descriptor, mText } = ids(did, manifest)
      if (!await this.has(nftId)) await this.write(nftId, { nft: descriptor, manifest: mText, metadata, artifact: { moveFrom: upload.path }, artifactName: manifest.artifactName, inner: upload.inner })
      return { nftId, did, artifactHash, manifest, folder: this.folder(nftId) }
    } finally {
      await rm(upload.path, { force: true })
    }
  }

  /**
   * Stores an NFT fetched from peers: the small files checked against the id (`verifyNftParts`),
   * the artifact a file whose blocks were each checked against the manifest's artifact CID.
   */
  async putFetched (nftId: string, parts: Record<Exclude<NftPart, 'artifact'>, Uint8Array>, artifact: { path: string, cid: string, inner: Uint8Array[] }): Promise<NftFiles> {
    const files = verifyNftParts(nftId, parts, artifact.cid)
    try {
      if (!await this.has(nftId)) await this.write(nftId, { nft: parts.nft, manifest: parts.manifest, metadata: parts.metadata, artifact: { moveFrom: artifact.path }, artifactName: files.manifest.artifactName, inner: artifact.inner })
    } finally {
      await rm(artifact.path, { force: true })
    }
    return { ...files, folder: this.folder(nftId) }
  }

  private async write (nftId: string, f: { nft: string | Uint8Array, manifest: string | Uint8Array, metadata: Uint8Array, artifact: Uint8Array | MovedFile, artifactName: string, inner?: Uint8Array[] }): Promise<void> {
    await writeFolderAtomically(this.dir, this.folder(nftId), [
      [FILE_OF.nft, f.nft], [FILE_OF.manifest, f.manifest], [FILE_OF.metadata, f.metadata], [f.artifactName, f.artifact],
      ...(f.inner !== undefined ? [[DAG_INDEX_FILE, encodeDagIndex(f.inner)] as [string, Uint8Array]] : [])
    ], async () => await this.has(nftId))
  }

  /** Where fetches keep their partial artifacts (one folder per NFT id, kept across restarts). */
  get fetchDir (): string { return join(this.dir, '.fetch') }

  /**
   * Removes temporary files a crash left (uploads cut short, folders not renamed into place);
   * partial fetches stay, to be resumed. Only files older than `before` (ms): an upload that
   * started since is not touched.
   */
  async removeLeftovers (before: number): Promise<number> {
    let n = 0
    let names: string[]
    try { names = await readdir(this.dir) } catch { return 0 }
    for (const name of names) {
      if (!name.startsWith(UPLOAD_PREFIX) && !name.startsWith('.tmp-')) continue
      const p = join(this.dir, name)
      try {
        if ((await stat(p)).mtimeMs >= before) continue
        await rm(p, { recursive: true, force: true })
        n++
      } catch { /* gone already */ }
    }
    return n
  }

  /** The artifact's file and size (NOT_FOUND when the NFT's files are not held). */
  async artifactFile (nftId: string): Promise<{ path: string, size: number, cid: string }> {
    const folder = this.folder(nftId)
    if (!await this.has(nftId)) throw new RbtError(ErrorCode.NOT_FOUND, `NFT ${nftId}: files not held on this node`)
    const m = parseManifest(await readFile(join(folder, FILE_OF.manifest), 'utf8'))
    const path = join(folder, m.artifactName)
    return { path, size: (await stat(path)).size, cid: m.artifact }
  }

  /** The inner nodes of the artifact's DAG; built from the file (once, then kept) for NFTs stored before the index existed. */
  async dagIndex (nftId: string): Promise<Uint8Array[]> {
    const indexPath = join(this.folder(nftId), DAG_INDEX_FILE)
    const kept = await readDagIndex(indexPath)
    if (kept !== undefined) return kept
    const a = await this.artifactFile(nftId)
    const dag = await dagOfFile(a.path)
    if (dag.cid !== a.cid) throw new RbtError(ErrorCode.STORAGE, `NFT ${nftId}: the stored artifact does not match its manifest`)
    await writeFileDurable(indexPath, encodeDagIndex(dag.inner))
    return dag.inner
  }

  /** One of the NFT's small files (descriptor, manifest, metadata). */
  async read (nftId: string, part: Exclude<NftPart, 'artifact'>): Promise<Uint8Array> {
    const folder = this.folder(nftId)
    if (!await this.has(nftId)) throw new RbtError(ErrorCode.NOT_FOUND, `NFT ${nftId}: files not held on this node`)
    return new Uint8Array(await readFile(join(folder, FILE_OF[part])))
  }

  /** Any part in pages of at most 256 KiB (the artifact read from its file a page at a time). */
  async pages (nftId: string, part: NftPart): Promise<AsyncIterable<Uint8Array> & { total: number }> {
    if (part !== 'artifact') {
      const bytes = await this.read(nftId, part)
      return Object.assign((async function * () { for (let off = 0; off < bytes.length; off += ARTIFACT_PAGE_BYTES) yield bytes.subarray(off, off + ARTIFACT_PAGE_BYTES) })(), { total: bytes.length })
    }
    const a = await this.artifactFile(nftId)
    const fh = await open(a.path, 'r')
    const gen = async function * (): AsyncGenerator<Uint8Array> {
      try {
        for (let off = 0; off < a.size; off += ARTIFACT_PAGE_BYTES) {
          const buf = Buffer.allocUnsafe(Math.min(ARTIFACT_PAGE_BYTES, a.size - off))
          const { bytesRead } = await fh.read(buf, 0, buf.length, off)
          if (bytesRead !== buf.length) throw new RbtError(ErrorCode.STORAGE, `NFT ${nftId}: the artifact file is shorter than it was`)
          yield buf
        }
      } finally {
        await fh.close()
      }
    }
    return Object.assign(gen(), { total: a.size })
  }

  async info (nftId: string): Promise<NftFiles | undefined> {
    if (!await this.has(nftId)) return undefined
    const folder = this.folder(nftId)
    const d = parseDescriptor(await readFile(join(folder, FILE_OF.nft), 'utf8'))
    const manifest = parseManifest(await readFile(join(folder, FILE_OF.manifest), 'utf8'))
    return { nftId, did: d.did, artifactHash: d.artifactHash, manifest, folder }
  }
}

/** Descriptor, manifest, id and ArtifactHash of a created NFT. */
function ids (did: string, manifest: NftManifest): { nftId: string, artifactHash: string, descriptor: string, mText: string } {
  const mText = manifestText(manifest)
  const artifactHash = cidV0ForContent(mText)
  const nftId = nftTokenId(did, artifactHash)
  const descriptor = goIndentedJson([['DID', did], ['ArtifactHash', artifactHash]])
  return { nftId, artifactHash, descriptor, mText }
}

/**
 * Checks fetched parts against the NFT id: descriptor → id, manifest → ArtifactHash, metadata →
 * manifest, and `artifactCid` (the root of the DAG whose every block was checked as it came) →
 * the manifest's artifact.
 */
export function verifyNftParts (nftId: string, parts: Record<Exclude<NftPart, 'artifact'>, Uint8Array>, artifactCid: string): Omit<NftFiles, 'folder'> {
  const manifest = verifyNftDocuments(nftId, parts)
  if (artifactCid !== manifest.manifest.artifact) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `NFT ${nftId}: the artifact does not match the manifest`)
  return manifest
}

/** The small documents of an NFT checked against its id; gives the manifest (whose artifact CID the artifact must match). */
export function verifyNftDocuments (nftId: string, parts: Record<Exclude<NftPart, 'artifact'>, Uint8Array>): Omit<NftFiles, 'folder'> {
  if (cidV0ForContent(parts.nft) !== nftId) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `NFT ${nftId}: the descriptor does not hash to the id`)
  const d = parseDescriptor(Buffer.from(parts.nft).toString('utf8'))
  if (cidV0ForContent(parts.manifest) !== d.artifactHash) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `NFT ${nftId}: the manifest does not hash to the artifact hash`)
  const manifest = parseManifest(Buffer.from(parts.manifest).toString('utf8'))
  if (cidV0ForContent(parts.metadata) !== manifest.metadata) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `NFT ${nftId}: the metadata does not match the manifest`)
  return { nftId, did: d.did, artifactHash: d.artifactHash, manifest }
}
