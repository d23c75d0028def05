import { ok } from '../../../contract/envelope.js'
import type { Context } from 'hono'
import type { ApiServices, NftApi, UploadSink } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { isMultipart } from '../../multipart.js'
import { streamMultipart, type PartSink } from '../../multipart-stream.js'
import { readableChunks } from '../../../../util/readable-chunks.js'
import type { Readable } from 'node:stream'

/** The metadata document's limit (it is read into memory), and what the rest of a form may add. */
export const NFT_METADATA_LIMIT = 256 * 1024
const FORM_OVERHEAD = 1024 * 1024
const MAX_FIELD_BYTES = 4096

interface NftUpload { did: string, metadata?: Uint8Array, artifact?: UploadSink, artifactName: string }

/** A part kept in memory, refusing more than `max` bytes. */
function memoryPart (max: number, tooLarge: () => RbtError, done: (b: Uint8Array) => void): PartSink {
  const chunks: Uint8Array[] = []
  let size = 0
  return {
    write: async (b) => {
      size += b.length
      if (size > max) throw tooLarge()
      chunks.push(Buffer.from(b))
    },
    end: async () => { done(new Uint8Array(Buffer.concat(chunks))) }
  }
}

/**
 * The request's body as it arrives. Under the node's HTTP server, read from the socket's stream
 * itself, paused while the reader is behind (readable-chunks.ts), whereas the web stream made of
 * it (Node 20) keeps reading into memory whatever the consumer's pace.
 */
function requestBytes (c: Context): AsyncIterable<Uint8Array> | null {
  const incoming = (c.env as { incoming?: Readable } | undefined)?.incoming
  if (incoming !== undefined && incoming.readableDidRead === false && typeof incoming.on === 'function' && typeof incoming.pause === 'function') return readableChunks(incoming)
  return c.req.raw.body as AsyncIterable<Uint8Array> | null
}

/**
 * Reads a create-NFT form as it arrives: `did` and `artifact_name` fields, the `metadata` file
 * (in memory, at most 256 KiB) and the `artifact` file, streamed into the service's sink (its
 * temporary file and CID) with the operator's limit. A body declared larger than the limit is
 * refused before it is read. On any failure the artifact written so far is removed.
 */
export async function readNftUpload (c: Context, api: NftApi): Promise<NftUpload> {
  if (!isMultipart(c)) throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid input: expected multipart/form-data')
  const declared = Number(c.req.header('content-length') ?? NaN)
  if (Number.isFinite(declared) && declared > api.artifactLimit + FORM_OVERHEAD) {
    throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `Upload of ${declared} bytes refused: the NFT artifact limit of this node is ${api.artifactLimit} bytes (rbtnode run -nftArtifactLimit, config rbtnode.nft_artifact_limit)`)
  }
  const fields: Record<string, string> = {}
  const up: NftUpload = { did: '', artifactName: 'artifact' }
  try {
    await streamMultipart(requestBytes(c), c.req.header('content-type'), async (p) => {
      if (/[/\\\0]/.test(p.filename ?? '') || (p.filename ?? '').includes('..')) {
        throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: file name ${JSON.stringify(p.filename)} must be a plain name, not a path`)
      }
      if (p.filename === undefined) {
        if (Object.hasOwn(fields, p.field)) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: field ${p.field} given twice`)
        return memoryPart(MAX_FIELD_BYTES, () => new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `field ${p.field} is larger than ${MAX_FIELD_BYTES} bytes`), (b) => { fields[p.field] = Buffer.from(b).toString('utf8') })
      }
      const lower = p.filename.toLowerCase()
      const name = p.field === 'metadata' || p.field === 'artifact' ? p.field : lower.endsWith('metadata') ? 'metadata' : lower.endsWith('artifact') ? 'artifact' : undefined
      if (name === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: unexpected file ${JSON.stringify(p.filename || p.field)} (expected metadata, artifact)`)
      if ((name === 'metadata' && up.metadata !== undefined) || (name === 'artifact' && up.artifact !== undefined)) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: ${name} given twice`)
      if (name === 'metadata') {
        return memoryPart(NFT_METADATA_LIMIT, () => new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `NFT metadata is larger than ${NFT_METADATA_LIMIT} bytes`), (b) => { up.metadata = b })
      }
      const sink = await api.artifactSink()
      up.artifact = sink
      return { write: async (b) => { await sink.write(b) }, end: async () => {} }
    })
  } catch (e) {
    await up.artifact?.abort()
    throw e
  }
  up.did = fields.did ?? ''
  up.artifactName = fields.artifact_name ?? 'artifact'
  return up
}

/** Creates the NFT of an upload (the artifact's sink is the service's to keep or remove from here on). */
export async function generateFromUpload (c: Context, api: NftApi): Promise<string> {
  const up = await readNftUpload(c, api)
  return await api.generate(up.did, up.metadata, up.artifact, up.artifactName)
}

export function nftRoutes (r: Registrar, s: ApiServices): void {
  const nfts = (): NftApi => {
    if (s.nfts === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'NFTs are not served by this node')
    return s.nfts
  }
  r.on('nftsGenerate', async ({ c }) => {
    return ok('NFT Token generated successfully', await generateFromUpload(c, nfts()))
  })
  r.on('nftsList', async () => ok('Nfts retrieved successfully', await nfts().list()))
  r.on('nftsSubscribe', async ({ query }) => { await nfts().subscribe(query.nft); return ok('NFT subscribed successfully', null) })
  r.on('nftChain', async ({ params }) => ok('Nft chain data retrieved successfully', await nfts().chain(params.nft_id)))
  r.on('nftChildren', async ({ params }) => {
    const list = await nfts().children(params.nft_id)
    return ok(list.length > 0 ? 'got child NFTs successfully' : 'no child NFTs found', list)
  })
  r.on('nftParent', async ({ params }) => {
    const p = await nfts().parent(params.nft_id)
    return ok(p !== null ? 'got parent NFT successfully' : 'no parent NFT', p)
  })
  r.on('nftFetch', async ({ query }) => {
    const res = await nfts().fetch(query.nft)
    return ok(res.message, { path: res.path, ...(res.artifact !== undefined ? { artifact: res.artifact } : {}) })
  })
}
