/**
 * The node's NFT service: creation (files + a Generated token record), deploy/execute/transfer and
 * child minting through consensus, listings, chains, parent/child links for the originator,
 * subscriptions (a gossipsub topic per NFT) and fetching files from peers with verification.
 * It reaches the network only through `NftNetwork` (nft-network.ts implements it over libp2p).
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { ok, type Envelope, type PendingSignature } from '../../api/contract/envelope.js'
import type { NftChainItem, NftListItem, NftTxResult } from '../../api/contract/nft-results.js'
import { NftFileStore, artifactFileName, verifyNftDocuments, type NftPart } from '../../token-files/nft/nft-files.js'
import { ArtifactWriter } from '../../token-files/nft/artifact-file.js'
import { NFT_TOKEN_TYPE, childLinkProblem, childNftId, isNftTokenType, type NftOp } from '../../consensus/nft.js'
import { parseTransferAmount } from '../../tokenchain/amount.js'
import { decodeBlockEnvelope } from '../../tokenchain/block.js'
import { isCidV0 } from '../../tokenchain/token-id.js'
import { ErrorCode, RbtError, deliveryPending, errorMessage } from '../../util/errors.js'
import { isValidDid } from '../../wallet/did-string.js'
import { followerBase, type AssetServiceDeps } from '../chain-follower/asset-service-deps.js'
import { ChainFollower, followNetwork, requireCore } from '../chain-follower/chain-follower.js'
import { nftChainItem } from './nft-chain.js'
import { ArtifactBlockServer } from './artifact-blocks.js'
import { fetchArtifact, removeFetch, type BlockSource } from './artifact-fetch.js'
import type { NftArtifactFetch, NftTxBody, UploadSink } from '../../api/server/services.js'
export type { NftTxBody } from '../../api/server/services.js'

/**
 * Published on `/rbt/nft/<id>/1.0.0` by the owner's node after each committed state. With `child`,
 * published on the parent's topic by the node that minted that child NFT (`blockId`, `owner` and
 * `txid` then describe the child's genesis), so the parent's originator learns its children.
 */
export interface NftEvent { nft: string, blockId: string, owner: string, txid: string, child?: string }

export interface NftNetwork {
  /** resolves to the number of peers the event was sent to */
  publish: (nftId: string, e: NftEvent) => Promise<number>
  /** follows the NFT's topic; `from` is the publishing peer */
  follow: (nftId: string, handler: (e: NftEvent, from: string | undefined) => void) => void
  fetchChain: (peer: string, nftId: string) => Promise<Uint8Array[]>
  fetchPart: (peer: string, nftId: string, part: NftPart) => Promise<Uint8Array>
  /** the artifact's blocks as `peer` serves them (`nft.blocks`) */
  blockSource: (peer: string, nftId: string) => BlockSource
  provide: (nftId: string) => Promise<void>
  /** peers that may hold the NFT: topic peers, DHT providers, then connected peers */
  candidates: (nftId: string) => Promise<string[]>
}

export interface NftServiceDeps extends AssetServiceDeps<NftNetwork> {
  files: NftFileStore
  /** the largest artifact accepted, bytes (default DEFAULT_NFT_ARTIFACT_LIMIT) */
  artifactLimit?: number
  /** test builds only: faults of the block server (artifact-blocks.ts) */
  blockFault?: ConstructorParameters<typeof ArtifactBlockServer>[1]
}

/** 4 GiB: the default artifact limit (`rbtnode run -nftArtifactLimit`, config `rbtnode.nft_artifact_limit`). */
export const DEFAULT_NFT_ARTIFACT_LIMIT = 4 * 1024 ** 3
/** The metadata document is read into memory: it stays small. */
export const NFT_METADATA_LIMIT = 256 * 1024

function checkNftId (id: string, what = 'NFT'): void {
  if (!isCidV0(id)) throw new RbtError(ErrorCode.INVALID_INPUT, `${what} id ${JSON.stringify(id)} is not a valid CID (Qm…, 46 characters)`)
}

export class NftService {
  private readonly follower: ChainFollower
  private readonly blockServer: ArtifactBlockServer
  /** fetches running, by NFT id (a second request for the same NFT waits for the first) */
  private readonly fetching = new Map<string, Promise<{ message: string, path: string, artifact?: NftArtifactFetch }>>()
  readonly artifactLimit: number

  constructor (private readonly d: NftServiceDeps) {
    this.artifactLimit = d.artifactLimit ?? DEFAULT_NFT_ARTIFACT_LIMIT
    this.blockServer = new ArtifactBlockServer(d.files, d.blockFault)
    this.follower = new ChainFollower({
      ...followerBase(d),
      what: 'NFT',
      network: () => followNetwork<NftEvent>(this.childAware(d.network()), (e) => e.nft)
    })
  }

  private net (): NftNetwork { return requireCore(this.d.network()) }

  /** The network as the chain follower sees it: child announcements go to `learnChild` instead. */
  private childAware (n: NftNetwork | undefined): NftNetwork | undefined {
    if (n === undefined) return undefined
    return {
      ...n,
      follow: (nftId, handler) => {
        n.follow(nftId, (e, from) => {
          if (e.child === undefined) { handler(e, from); return }
          if (e.nft !== nftId || from === undefined) return
          this.learnChild(nftId, e.child, from).catch((err) => { this.d.log.warn(`NFT ${nftId}: announced child ${e.child ?? ''} from ${from} refused: ${errorMessage(err)}`) })
        })
      }
    }
  }

  /** A temporary file for an uploaded artifact (the NFT directory's disk), hashed as it is written. */
  async artifactSink (): Promise<UploadSink> {
    return await ArtifactWriter.open(this.d.files.dir, this.artifactLimit)
  }

  /**
   * Creates an NFT. `artifact` is its bytes or the sink it was uploaded to (artifactSink), which
   * this call takes over: moved into the NFT's folder, or removed when the creation is refused.
   */
  async generate (did: string, metadata: Uint8Array | undefined, artifact: Uint8Array | UploadSink | undefined, artifactName: string): Promise<string> {
    const upload = artifact instanceof ArtifactWriter ? artifact : undefined
    try {
      if (artifact !== undefined && !(artifact instanceof Uint8Array) && upload === undefined) throw new RbtError(ErrorCode.INTERNAL, 'an artifact upload not made by this service')
      if (!isValidDid(did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
      if (metadata === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'Creation of NFT failed, failed to retrieve metadata (file field "metadata")')
      if (artifact === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'Creation of NFT failed, failed to retrieve NFT artifact (file field "artifact")')
      if (metadata.length > NFT_METADATA_LIMIT) throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `NFT metadata is larger than ${NFT_METADATA_LIMIT} bytes`)
      if (artifact instanceof Uint8Array && artifact.length > this.artifactLimit) throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `the NFT artifact is larger than this node's limit of ${this.artifactLimit} bytes`)
      try { JSON.parse(Buffer.from(metadata).toString('utf8')) } catch { throw new RbtError(ErrorCode.INVALID_INPUT, 'Creation of NFT failed, metadata is not a JSON document') }
      artifactFileName(artifactName)
      if (!await this.d.identity.isLocal(did)) throw new RbtError(ErrorCode.FORBIDDEN, `DID does not have an access: ${did} is not hosted on this node`)
    } catch (e) {
      await upload?.abort()
      throw e
    }
    const f = upload !== undefined
      ? await this.d.files.createFromUpload(did, metadata, await upload.close(), artifactName)
      : await this.d.files.create(did, metadata, artifact as Uint8Array, artifactName)
    if (await this.d.ledger.token(f.nftId) === undefined) {
      await this.d.ledger.commit((w) => { w.putToken({ tokenId: f.nftId, tokenType: NFT_TOKEN_TYPE, valueMilli: 0, owner: did, status: 'Generated', latestBlockId: '', updatedAt: Date.now() }) })
    }
    this.d.network()?.provide(f.nftId).catch((e) => { this.d.log.debug(`NFT ${f.nftId}: provide failed: ${errorMessage(e)}`) })
    return f.nftId
  }

  async list (): Promise<NftListItem[]> {
    const out: NftListItem[] = []
    for await (const t of this.d.repos.tokens.all()) {
      if (t.kind !== 'nft') continue
      out.push({ nft_id: t.tokenId, owner: t.owner, value: t.value / 1000, status: t.status, latest_block_id: t.latestBlockId, parent_nft_id: t.parent ?? null })
    }
    return out
  }

  private async envelopes (nftId: string): Promise<Uint8Array[]> {
    checkNftId(nftId)
    const chain = await this.d.ledger.chain(nftId)
    if (chain.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `NFT ${nftId} has no chain on this node (unknown or not deployed)`)
    return chain
  }

  async chain (nftId: string): Promise<NftChainItem[]> {
    return (await this.envelopes(nftId)).map((env) => nftChainItem(nftId, env))
  }

  /** Creator (deployer) of an NFT and the parent its genesis names; only the originator's node answers links. */
  private async originator (nftId: string): Promise<{ creator: string, parent?: string }> {
    const g = decodeBlockEnvelope((await this.envelopes(nftId))[0])
    const creator = g.content.owner
    if (!await this.d.identity.isLocal(creator)) {
      throw new RbtError(ErrorCode.FORBIDDEN, `only the originator's node answers NFT links: NFT ${nftId} was created by ${creator}, not hosted here`)
    }
    const p = g.content.genesis?.info[nftId]?.parentId
    return { creator, ...(p !== undefined && p !== '' ? { parent: p } : {}) }
  }

  async children (nftId: string): Promise<Array<{ nft_id: string, value: number }>> {
    await this.originator(nftId)
    const out: Array<{ nft_id: string, value: number }> = []
    for await (const t of this.d.repos.tokens.all()) if (t.kind === 'nft' && t.parent === nftId) out.push({ nft_id: t.tokenId, value: t.value / 1000 })
    return out
  }

  async parent (nftId: string): Promise<{ nft_id: string, value: number } | null> {
    const o = await this.originator(nftId)
    if (o.parent === undefined) return null
    const p = await this.d.ledger.token(o.parent)
    return { nft_id: o.parent, value: (p?.valueMilli ?? 0) / 1000 }
  }

  /** POST /svc/v1/tx with tokens.nft: deploy, execute, transfer or mint a child (one NFT per transaction). */
  async transact (body: NftTxBody): Promise<Envelope<NftTxResult | PendingSignature>> {
    if (!isValidDid(body.initiator)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID: initiator')
    if (body.nft.length !== 1) throw new RbtError(ErrorCode.INVALID_INPUT, 'one NFT per transaction: tokens.nft must hold exactly one entry')
    const item = body.nft[0]
    checkNftId(item.nftId)
    const valueMilli = parseTransferAmount(item.value)
    const data = item.data ?? ''
    const transfer = body.transferNftOwnership === true
    let op: NftOp
    let receiver = body.initiator
    let child: { parentNFTId: string, childNFTId: string } | undefined
    if (item.parentNFTId !== undefined && item.parentNFTId !== '') {
      checkNftId(item.parentNFTId, 'parent NFT')
      if (item.parentNFTId !== item.nftId) throw new RbtError(ErrorCode.INVALID_INPUT, 'to mint a child NFT, give the parent id both as nftId and parentNFTId')
      const parent = await this.d.ledger.token(item.parentNFTId)
      if (parent === undefined || !isNftTokenType(parent.tokenType) || parent.latestBlockId === '') throw new RbtError(ErrorCode.NOT_FOUND, `parent NFT ${item.parentNFTId} is not deployed or not known on this node`)
      const nonce = randomBytes(16).toString('hex')
      const id = childNftId(body.initiator, item.parentNFTId, nonce)
      op = { op: 'deploy', nftId: id, valueMilli, data, parentId: item.parentNFTId, nonce }
      child = { parentNFTId: item.parentNFTId, childNFTId: id }
    } else {
      const t = await this.d.ledger.token(item.nftId)
      if (t === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `NFT ${item.nftId} is not known on this node`)
      if (t.status === 'Generated') {
        if (transfer) throw new RbtError(ErrorCode.INVALID_INPUT, `NFT ${item.nftId} is not deployed yet: deploy it first, then transfer it`)
        const files = await this.d.files.info(item.nftId)
        if (files === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `NFT ${item.nftId}: files not held on this node`)
        op = { op: 'deploy', nftId: item.nftId, valueMilli, data, artifactHash: files.artifactHash }
      } else {
        op = { op: 'execute', nftId: item.nftId, valueMilli, data }
        if (transfer) {
          if (!isValidDid(body.owner)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID: owner')
          if (body.owner === body.initiator) throw new RbtError(ErrorCode.INVALID_INPUT, 'transferNftOwnership needs an owner other than the initiator')
          receiver = body.owner
        }
      }
    }
    const rec = await this.d.identity.record(body.initiator)
    if (rec === undefined) throw new RbtError(ErrorCode.FORBIDDEN, `DID does not have an access: ${body.initiator} is not hosted on this node`)
    return await this.d.twoStep.start(body.initiator, rec.type, async (prompt) => {
      const r = await this.d.transact({ initiator: body.initiator, receiver, op, memo: body.memo ?? '' }, prompt)
      // success means the receiver holds the NFT
      if (!r.delivered) throw deliveryPending(r.txid)
      return ok<NftTxResult>(`Transaction ${r.txid} completed successfully`, { transactionID: r.txid, mintedNFTChildren: child !== undefined ? [child] : null })
    }, receiver !== body.initiator ? 'nft-transfer' : `nft-${op.op}`)
  }

  /** After a committed NFT transaction on this node: publish the new state on the NFT's topic. */
  committed (nftId: string, blockId: string, owner: string, txid: string): void {
    const n = this.d.network()
    if (n === undefined) return
    this.follow(nftId)
    // NFTs this node has committed are followed across restarts too
    this.d.follows.put(nftId).catch(() => {})
    n.publish(nftId, { nft: nftId, blockId, owner, txid }).catch((e) => { this.d.log.debug(`NFT ${nftId} event: ${errorMessage(e)}`) })
    n.provide(nftId).catch(() => {})
    this.announceChild(nftId, blockId, owner, txid).catch((e) => { this.d.log.debug(`NFT ${nftId}: child announcement: ${errorMessage(e)}`) })
  }

  /**
   * A child NFT just deployed here is announced on its parent's topic, where the parent's
   * originator listens (it may be another node). Retried with backoff while the topic has no
   * peer to send it to yet (the mesh forms a heartbeat after joining).
   */
  private async announceChild (nftId: string, blockId: string, owner: string, txid: string, attempts = 8): Promise<void> {
    const chain = await this.d.ledger.chain(nftId)
    if (chain.length !== 1) return
    const parent = decodeBlockEnvelope(chain[0]).content.genesis?.info[nftId]?.parentId
    if (parent === undefined || parent === '') return
    this.follow(parent)
    const event: NftEvent = { nft: parent, child: nftId, blockId, owner, txid }
    for (let i = 0; i < attempts; i++) {
      const n = this.d.network()
      if (n === undefined) return
      const sent = await n.publish(parent, event).catch(() => 0)
      if (sent > 0) { this.d.log.debug(`NFT ${nftId}: announced as a child of ${parent} to ${sent} peer(s)`); return }
      await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** i, 8000)))
    }
    this.d.log.warn(`NFT ${nftId}: no peer follows the parent ${parent}: its originator was not told of this child`)
  }

  /**
   * The parent's originator hears of a child minted elsewhere: fetches the child's chain from the
   * announcing peer and keeps it only if the link holds (see childLinkProblem) and the whole chain
   * validates (signatures, quorum signatures). Other followers of the parent ignore the announcement.
   */
  private async learnChild (parentId: string, childId: string, peer: string): Promise<void> {
    checkNftId(childId, 'child NFT')
    const parentChain = await this.d.ledger.chain(parentId)
    if (parentChain.length === 0) return
    if (!await this.d.identity.isLocal(decodeBlockEnvelope(parentChain[0]).content.owner)) return
    if (await this.d.ledger.token(childId) !== undefined) return
    const blocks = await this.net().fetchChain(peer, childId)
    if (blocks.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `peer ${peer} holds no chain for the announced child ${childId}`)
    const genesis = decodeBlockEnvelope(blocks[0])
    const owners = async (): Promise<Set<string>> => new Set((await this.d.ledger.chain(parentId)).map((b) => decodeBlockEnvelope(b).content.owner))
    let problem = childLinkProblem(parentId, childId, genesis, await owners())
    if (problem !== undefined && !(await owners()).has(genesis.content.owner)) {
      // the parent may have moved on since this node last synced it: catch up from the announcer, then check again
      await this.sync(parentId, peer).catch((e) => { this.d.log.debug(`NFT ${parentId}: sync from ${peer}: ${errorMessage(e)}`) })
      problem = childLinkProblem(parentId, childId, genesis, await owners())
    }
    if (problem !== undefined) throw new RbtError(ErrorCode.VERIFICATION_FAILED, problem)
    await this.follower.syncBlocks(childId, blocks, peer)
  }

  async subscribe (nftId: string): Promise<void> {
    checkNftId(nftId)
    this.net()
    await this.d.follows.put(nftId)
    this.follow(nftId)
    // catch up at once from whoever holds it
    this.syncFromAny(nftId).catch(() => {})
  }

  /** Re-follows the NFTs followed before a restart. */
  async resume (): Promise<void> {
    for (const id of await this.d.follows.list()) this.follow(id)
  }

  private follow (nftId: string): void { this.follower.follow(nftId) }

  private async syncFromAny (nftId: string): Promise<void> { await this.follower.syncFromAny(nftId) }

  /** Fetches the NFT's chain from `peer`, validates the whole chain and stores it (never trusted as sent). */
  async sync (nftId: string, peer: string, wantBlockId?: string): Promise<void> { await this.follower.sync(nftId, peer, wantBlockId) }

  /**
   * GET /svc/v1/fetch-nft: the NFT's files from the network into the local NFT folder, verified
   * against the id: the small documents from the first peer that has them, the artifact block by
   * block from every peer that may hold it (artifact-fetch.ts), resuming a fetch cut short.
   */
  async fetch (nftId: string): Promise<{ message: string, path: string, artifact?: NftArtifactFetch }> {
    checkNftId(nftId)
    const running = this.fetching.get(nftId)
    if (running !== undefined) return await running
    const p = this.fetchOnce(nftId).finally(() => { this.fetching.delete(nftId) })
    this.fetching.set(nftId, p)
    return await p
  }

  private async fetchOnce (nftId: string): Promise<{ message: string, path: string, artifact?: NftArtifactFetch }> {
    const folder = this.d.files.folder(nftId)
    if (await this.d.files.has(nftId)) return { message: 'NFT directory already exists', path: folder }
    const n = this.net()
    const errors: string[] = []
    const peers = await n.candidates(nftId)
    // the first peer that answers with the descriptor goes first; the others follow in order
    const first = await Promise.any(peers.map(async (peer) => {
      const d = await n.fetchPart(peer, nftId, 'nft')
      if (d.length === 0) throw new Error('empty')
      return peer
    })).catch(() => undefined)
    const ordered = first === undefined ? peers : [first, ...peers.filter((p) => p !== first)]
    let docs: Record<Exclude<NftPart, 'artifact'>, Uint8Array> | undefined
    let artifactCid = ''
    let from = ''
    for (const peer of ordered) {
      try {
        const got = { nft: await n.fetchPart(peer, nftId, 'nft'), manifest: await n.fetchPart(peer, nftId, 'manifest'), metadata: await n.fetchPart(peer, nftId, 'metadata') }
        artifactCid = verifyNftDocuments(nftId, got).manifest.artifact
        docs = got
        from = peer
        break
      } catch (e) {
        errors.push(`${peer.slice(0, 12)}…: ${errorMessage(e)}`)
      }
    }
    if (docs === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `Failed to fetch NFT ${nftId}: ${errors.length === 0 ? 'no peer holds it' : errors.join('; ')}`)
    const dir = join(this.d.files.fetchDir, nftId)
    const r = await fetchArtifact({ cid: artifactCid, dir, sources: ordered.map((p) => n.blockSource(p, nftId)), log: this.d.log })
    await this.d.files.putFetched(nftId, docs, r)
    await removeFetch(dir)
    const rejected = Object.values(r.rejected).reduce((a, b) => a + b, 0)
    this.d.log.info(`NFT ${nftId}: artifact of ${r.size} bytes fetched (${r.blocks} blocks from ${Object.keys(r.perPeer).length} peer(s), ${r.resumed} kept from an earlier fetch${rejected > 0 ? `, ${rejected} wrong block(s) refused` : ''})`)
    await this.sync(nftId, from).catch((e) => { this.d.log.debug(`NFT ${nftId} chain from ${from}: ${errorMessage(e)}`) })
    n.provide(nftId).catch(() => {})
    return { message: 'NFT fetched successfully', path: folder, artifact: { size: r.size, blocks: r.blocks, resumed: r.resumed, peers: r.perPeer, rejected: r.rejected } }
  }

  // ---- served to peers
  async servePart (nftId: string, part: NftPart): Promise<AsyncIterable<Uint8Array> & { total: number }> { return await this.d.files.pages(nftId, part) }
  serveBlocks (nftId: string, cids: readonly string[], signal?: AbortSignal): AsyncIterable<{ cid: string, block: Uint8Array }> {
    return this.blockServer.blocks(nftId, cids, signal)
  }

  async serveChain (nftId: string): Promise<Uint8Array[]> {
    checkNftId(nftId)
    return await this.d.ledger.chain(nftId)
  }
}
