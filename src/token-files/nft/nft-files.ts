/**
 * NFT files, content-addressed. An NFT is three documents and two files:
 *   manifest  = indented JSON {Metadata: CID(metadata), Artifact: CID(artifact), ArtifactName}
 *   ArtifactHash = CID(manifest)
 *   descriptor (nft.json) = indented JSON {DID, ArtifactHash}; the NFT id is CID(descriptor)
 * so anyone holding the id can check every byte fetched from a peer. Files live under
 * `<data dir>/nft/<nft id>/`, written into a temporary folder and renamed into place.
 */
import { readFile, stat } from 'node:fs/promises'
import { writeFolderAtomically } from '../folder-write.js'
import { join } from 'node:path'
import { cidV0ForContent, goIndentedJson, isCidV0, nftTokenId } from '../../tokenchain/token-id.js'
import { ErrorCode, RbtError } from '../../util/errors.js'

export type NftPart = 'nft' | 'manifest' | 'metadata' | 'artifact'
export const NFT_PARTS: readonly NftPart[] = ['nft', 'manifest', 'metadata', 'artifact']

export interface NftManifest { metadata: string, artifact: string, artifactName: string }

const FILE_OF: Record<Exclude<NftPart, 'artifact'>, string> = { nft: 'nft.json', manifest: 'manifest.json', metadata: 'metadata.json' }
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
    const mText = manifestText(manifest)
    const artifactHash = cidV0ForContent(mText)
    const nftId = nftTokenId(did, artifactHash)
    const descriptor = goIndentedJson([['DID', did], ['ArtifactHash', artifactHash]])
    if (!await this.has(nftId)) await this.write(nftId, { nft: descriptor, manifest: mText, metadata, artifact, artifactName: manifest.artifactName })
    return { nftId, did, artifactHash, manifest, folder: this.folder(nftId) }
  }

  /** Stores files fetched from a peer after checking each against the id (see `verify`). */
  async putVerified (nftId: string, parts: Record<NftPart, Uint8Array>): Promise<NftFiles> {
    const files = verifyNftParts(nftId, parts)
    if (!await this.has(nftId)) await this.write(nftId, { nft: parts.nft, manifest: parts.manifest, metadata: parts.metadata, artifact: parts.artifact, artifactName: files.manifest.artifactName })
    return { ...files, folder: this.folder(nftId) }
  }

  private async write (nftId: string, f: { nft: string | Uint8Array, manifest: string | Uint8Array, metadata: Uint8Array, artifact: Uint8Array, artifactName: string }): Promise<void> {
    await writeFolderAtomically(this.dir, this.folder(nftId), [
      [FILE_OF.nft, f.nft], [FILE_OF.manifest, f.manifest], [FILE_OF.metadata, f.metadata], [f.artifactName, f.artifact]
    ], async () => await this.has(nftId))
  }

  async read (nftId: string, part: NftPart): Promise<Uint8Array> {
    const folder = this.folder(nftId)
    if (!await this.has(nftId)) throw new RbtError(ErrorCode.NOT_FOUND, `NFT ${nftId}: files not held on this node`)
    if (part !== 'artifact') return new Uint8Array(await readFile(join(folder, FILE_OF[part])))
    const m = parseManifest(await readFile(join(folder, FILE_OF.manifest), 'utf8'))
    return new Uint8Array(await readFile(join(folder, m.artifactName)))
  }

  async info (nftId: string): Promise<NftFiles | undefined> {
    if (!await this.has(nftId)) return undefined
    const folder = this.folder(nftId)
    const d = parseDescriptor(await readFile(join(folder, FILE_OF.nft), 'utf8'))
    const manifest = parseManifest(await readFile(join(folder, FILE_OF.manifest), 'utf8'))
    return { nftId, did: d.did, artifactHash: d.artifactHash, manifest, folder }
  }
}

/** Checks fetched parts against the NFT id: descriptor → id, manifest → ArtifactHash, files → manifest CIDs. */
export function verifyNftParts (nftId: string, parts: Record<NftPart, Uint8Array>): Omit<NftFiles, 'folder'> {
  if (cidV0ForContent(parts.nft) !== nftId) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `NFT ${nftId}: the descriptor does not hash to the id`)
  const d = parseDescriptor(Buffer.from(parts.nft).toString('utf8'))
  if (cidV0ForContent(parts.manifest) !== d.artifactHash) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `NFT ${nftId}: the manifest does not hash to the artifact hash`)
  const manifest = parseManifest(Buffer.from(parts.manifest).toString('utf8'))
  if (cidV0ForContent(parts.metadata) !== manifest.metadata) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `NFT ${nftId}: the metadata does not match the manifest`)
  if (cidV0ForContent(parts.artifact) !== manifest.artifact) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `NFT ${nftId}: the artifact does not match the manifest`)
  return { nftId, did: d.did, artifactHash: d.artifactHash, manifest }
}
