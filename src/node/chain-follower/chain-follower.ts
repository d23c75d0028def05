/**
 * Following a single-token chain (an NFT or a smart contract) from the network: a gossipsub topic
 * per token announces new states; on each announcement, and at once when following starts, the
 * chain is fetched from peers, validated whole and stored (never trusted as sent).
 */
import type { Ledger } from '../../consensus/ports.js'
import { decodeBlockEnvelope } from '../../tokenchain/block.js'
import type { TokenService } from '../../tokens/token-service.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'

/** The network port once the core runs; NOT_RUNNING before. */
export function requireCore<T> (n: T | undefined): T {
  if (n === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
  return n
}

export interface FollowNetwork {
  /** calls `handler` with the announced block id and the publishing peer on every event for `id` */
  follow: (id: string, handler: (blockId: string, from: string | undefined) => void) => void
  fetchChain: (peer: string, id: string) => Promise<Uint8Array[]>
  /** peers that may hold the token: topic peers, DHT providers, then connected peers */
  candidates: (id: string) => Promise<string[]>
}

/** A token network whose events name their token (`tokenOf`) and block: the follower's view of it. */
export function followNetwork<E extends { blockId: string }> (n: (Omit<FollowNetwork, 'follow'> & { follow: (id: string, h: (e: E, from: string | undefined) => void) => void }) | undefined, tokenOf: (e: E) => string): FollowNetwork | undefined {
  if (n === undefined) return undefined
  return { ...n, follow: (id, h) => { n.follow(id, (e, from) => { if (tokenOf(e) === id) h(e.blockId, from) }) } }
}

export interface ChainFollowerDeps {
  ledger: Ledger
  tokens: Pick<TokenService, 'ingestChain'>
  isLocal: (did: string) => Promise<boolean>
  network: () => FollowNetwork | undefined
  log: Logger
  /** "NFT" or "smart contract", for messages */
  what: string
  /** a check of the new blocks beyond what ingestChain validates; throws to refuse the chain */
  check?: (id: string, chain: Uint8Array[], heldBefore: number) => Promise<void>
  /** told after new blocks were stored: the whole chain and how many blocks were held before */
  onSynced?: (id: string, chain: Uint8Array[], heldBefore: number) => void
}

export class ChainFollower {
  private readonly followed = new Set<string>()
  private readonly syncing = new Map<string, Promise<void>>()

  constructor (private readonly d: ChainFollowerDeps) {}

  private net (): FollowNetwork { return requireCore(this.d.network()) }

  /** Joins the token's topic (once); each announcement triggers a sync from its publisher. */
  follow (id: string): void {
    if (this.followed.has(id)) return
    const n = this.d.network()
    if (n === undefined) return
    this.followed.add(id)
    n.follow(id, (blockId, from) => {
      if (from === undefined) return
      this.sync(id, from, blockId).catch((err) => { this.d.log.debug(`${this.d.what} ${id}: sync from ${from} failed: ${errorMessage(err)}`) })
    })
  }

  /** Catch-up after subscribing: the gossip mesh and DHT providers take a moment, so ask again with backoff (bounded). */
  async syncFromAny (id: string, deadlineMs = 60_000): Promise<void> {
    const until = Date.now() + deadlineMs
    for (let i = 0; Date.now() < until; i++) {
      const n = this.d.network()
      if (n === undefined) return
      const peers = await n.candidates(id).catch(() => [])
      // all candidates at once: one slow or unreachable peer must not hold the others up
      const got = await Promise.all(peers.map(async (peer) => ({ peer, blocks: await n.fetchChain(peer, id).catch(() => [] as Uint8Array[]) })))
      got.sort((x, y) => y.blocks.length - x.blocks.length)
      this.d.log.debug(`${this.d.what} ${id}: catching up, ${peers.length} candidate peer(s), longest chain ${got[0]?.blocks.length ?? 0}`)
      for (const g of got) {
        if (g.blocks.length === 0) break
        try {
          await this.syncBlocks(id, g.blocks, g.peer)
          if ((await this.d.ledger.chain(id)).length > 0) return
        } catch (e) { this.d.log.debug(`${this.d.what} ${id}: chain from ${g.peer}: ${errorMessage(e)}`) }
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** i, 5000)))
    }
  }

  /** Fetches the chain from `peer`, validates it whole and stores it. */
  async sync (id: string, peer: string, wantBlockId?: string): Promise<void> {
    const have = await this.d.ledger.token(id)
    if (wantBlockId !== undefined && have?.latestBlockId === wantBlockId) return
    await this.syncBlocks(id, await this.net().fetchChain(peer, id), peer)
  }

  /** Validates and stores `blocks` as the chain of `id` (fetched from `peer`) when they extend what is held. */
  async syncBlocks (id: string, blocks: Uint8Array[], peer: string): Promise<void> {
    const prev = this.syncing.get(id) ?? Promise.resolve()
    const run = prev.catch(() => {}).then(async () => {
      const have = await this.d.ledger.token(id)
      if (have !== undefined && (have.status === 'Locked' || have.status === 'Generated')) return
      if (blocks.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `peer ${peer} holds no chain for ${this.d.what} ${id}`)
      const held = await this.d.ledger.chain(id)
      if (blocks.length <= held.length) return
      const owner = decodeBlockEnvelope(blocks[blocks.length - 1]).content.owner
      const status = await this.d.isLocal(owner) ? 'Free' : 'Transferred'
      await this.d.check?.(id, blocks, held.length)
      await this.d.tokens.ingestChain(id, blocks, { status })
      this.d.log.info(`${this.d.what} ${id}: synced ${blocks.length} blocks from ${peer}, owner ${owner}`)
      try { this.d.onSynced?.(id, blocks, held.length) } catch (e) { this.d.log.debug(`${this.d.what} ${id}: ${errorMessage(e)}`) }
    })
    this.syncing.set(id, run)
    await run
  }
}
