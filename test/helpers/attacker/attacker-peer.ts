import { randomBytes } from 'node:crypto'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'
import { createP2pHost, type P2pHost } from '../../../src/p2p/host.js'
import { createRpc, type Rpc, type RpcContext, type RpcHandlers, type UnarySpec } from '../../../src/p2p/rpc.js'
import { defaultSwarmKeyPath, loadSwarmKey } from '../../../src/p2p/swarm-key.js'
import { kadKey, kadPeerKey, compareDistance } from '../../../src/p2p/closest-query.js'
import { spentKeyBytes } from '../../../src/node/consensus/spent-markers.js'
import { peerGrantBytes, peerSealBytes } from '../../../src/consensus/claim-proofs.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'

/**
 * A peer the cheating owner runs (docs/security.md, "Threat model"): its own libp2p host on the
 * test network (the packaged test swarm key, discovery off, 127.0.0.1), speaking the nodes' real
 * rpc. It is no rbtnode: it serves what the attack needs and asks what it likes.
 *
 * How it answers the nodes' requests:
 * - `grant`: an arbiter that grants every claim (and tells the attack which it saw);
 * - `hang`: accepts every request and never answers (the caller's deadline ends it);
 * - `refuse`: answers every claim `granted: false` naming a made-up holder.
 */
export type Behaviour = 'grant' | 'hang' | 'refuse'

export interface SeenClaim { txid: string, quorum: string, stateHash: string, via?: string, from: string, at: number }

interface ClaimItem { txid: string, quorum?: string, stateHash: string, via?: string, p?: number, ps?: number[] }
type ClaimAnswer = { granted: boolean, holder?: string, spent?: boolean, closer: string[] }

/** The methods the attacker serves and calls (the nodes' wire names; see docs/protocol.md). */
export interface AttackerMethods {
  'claims.claim': UnarySpec<{ items: ClaimItem[], proofs?: Array<{ quorum?: string, nonce?: string }> }, { answers: ClaimAnswer[], addrs: Record<string, string[]>, pgrants?: Array<{ items: number[], p: number, sig: string }> }>
  'claims.release': UnarySpec<{ txid: string, stateHashes: string[] }, { freed: number }>
  'claims.status': UnarySpec<{ txid: string, quorum: string }, { outcome: 'pending' | 'committed' | 'released' }>
  'claims.seal': UnarySpec<{ txid: string, items: Array<{ stateHash: string, holder: string }> }, { answers: Array<{ sealed: boolean, holder?: string, why?: string }>, seals?: Array<{ holder: string, items: number[], sig: string }> }>
  'markers.get': UnarySpec<{ stateHash: string }, { record?: unknown, closer: unknown[] }>
  'markers.put': UnarySpec<{ stateHash: string, record: unknown }, { closer: unknown[] }>
  'markers.getMany': UnarySpec<{ stateHashes: string[] }, { answers: Array<{ record?: unknown, closer: string[] }>, addrs: Record<string, string[]> }>
  'markers.putMany': UnarySpec<{ items: Array<{ stateHash: string, record: unknown }> }, { answers: Array<{ closer: string[] }>, addrs: Record<string, string[]> }>
}

/**
 * The dials of all the owner's peers in this process: at most `perTarget` at once to one address
 * (below a node's 10 handshakes at once) and `total` in all.
 */
export class DialSlots {
  private readonly busy = new Map<string, number>()
  private running = 0
  private readonly waiting: Array<() => void> = []

  constructor (readonly perTarget: number, readonly total: number) {}

  async run<T> (target: string, f: () => Promise<T>): Promise<T> {
    while (this.running >= this.total || (this.busy.get(target) ?? 0) >= this.perTarget) {
      await new Promise<void>((resolve) => this.waiting.push(resolve))
    }
    this.running++
    this.busy.set(target, (this.busy.get(target) ?? 0) + 1)
    try {
      return await f()
    } finally {
      this.running--
      const n = (this.busy.get(target) ?? 1) - 1
      if (n === 0) this.busy.delete(target); else this.busy.set(target, n)
      // every waiter looks again (few of them, and only while peers join)
      for (const w of this.waiting.splice(0)) w()
    }
  }
}

const dialSlots = new DialSlots(4, 12)

/** The dials of the owner's peers of this process so far: made, and failed (then tried again or given up). */
export const dialStats = { made: 0, failed: 0 }

const hangUntilAborted = async (ctx: RpcContext): Promise<never> => await new Promise((_resolve, reject) => {
  if (ctx.signal.aborted) { reject(ctx.signal.reason); return }
  ctx.signal.addEventListener('abort', () => { reject(ctx.signal.reason) }, { once: true })
})

export class AttackerPeer {
  readonly seen: SeenClaim[] = []
  private listeners: Array<(c: SeenClaim) => void> = []
  behaviour: Behaviour

  private constructor (readonly host: P2pHost, readonly rpc: Rpc<AttackerMethods>, behaviour: Behaviour) { this.behaviour = behaviour }

  get peerId (): string { return this.host.peerId }

  /** A started peer with `key` (a ground key) or a fresh one. */
  static async start (o: { behaviour?: Behaviour, key?: PrivateKey } = {}): Promise<AttackerPeer> {
    const swarmKey = await loadSwarmKey(defaultSwarmKeyPath(true))
    const host = await createP2pHost({ swarmKey, listen: ['/ip4/127.0.0.1/tcp/0'], ...(o.key !== undefined ? { privateKey: o.key } : {}), mdns: false })
    await host.start()
    let peer: AttackerPeer | undefined
    const behaviour = (): Behaviour => peer?.behaviour ?? o.behaviour ?? 'grant'
    const closerless = { closer: [] as unknown[] }
    const handlers: RpcHandlers<AttackerMethods> = {
      'claims.claim': async (req, ctx) => {
        const items = Array.isArray(req?.items) ? req.items : []
        const proofs = Array.isArray(req?.proofs) ? req.proofs : []
        const quorumOf = (it: ClaimItem): string => it.quorum ?? proofs[it.ps?.[0] ?? -1]?.quorum ?? ''
        for (const it of items) peer?.saw({ txid: it.txid, quorum: quorumOf(it), stateHash: it.stateHash, ...(it.via !== undefined ? { via: it.via } : {}), from: ctx.peerId, at: Date.now() })
        const b = behaviour()
        if (b === 'hang') return await hangUntilAborted(ctx)
        const fake = randomBytes(32).toString('hex')
        // a Sybil arbiter grants, signing each claimant's grant with its own peer key as an honest arbiter does
        const pgrants: Array<{ items: number[], p: number, sig: string }> = []
        if (b === 'grant') {
          const groups = new Map<string, number[]>()
          items.forEach((it, i) => { for (const p of it.ps ?? (it.p !== undefined ? [it.p] : [])) { const k = `${it.txid}|${it.via ?? ''}|${p}`; groups.set(k, [...(groups.get(k) ?? []), i]) } })
          for (const [k, idx] of groups) {
            const p = Number(k.split('|')[2])
            const first = items[idx[0]!]!
            const sig = await host.signAsPeer(peerGrantBytes({ peer: host.peerId, txid: first.txid, quorum: proofs[p]?.quorum ?? first.quorum ?? '', nonce: proofs[p]?.nonce ?? '', forTx: first.via ?? first.txid, states: idx.map((i) => items[i]!.stateHash) }))
            pgrants.push({ items: idx, p, sig: Buffer.from(sig).toString('hex') })
          }
        }
        return { answers: items.map(() => b === 'grant' ? { granted: true, closer: [] } : { granted: false, holder: fake, closer: [] }), addrs: {}, ...(pgrants.length > 0 ? { pgrants } : {}) }
      },
      // a Sybil arbiter seals whatever it is asked to, signing each holder's states with its peer key as an honest arbiter does
      'claims.seal': async (req, ctx) => {
        const items = Array.isArray(req?.items) ? req.items : []
        const b = behaviour()
        if (b === 'hang') return await hangUntilAborted(ctx)
        if (b !== 'grant') return { answers: items.map(() => ({ sealed: false, holder: randomBytes(32).toString('hex'), why: 'refused' })) }
        const byHolder = new Map<string, number[]>()
        items.forEach((it, i) => { byHolder.set(it.holder, [...(byHolder.get(it.holder) ?? []), i]) })
        const seals = await Promise.all([...byHolder].map(async ([holder, idx]) => ({ holder, items: idx, sig: Buffer.from(await host.signAsPeer(peerSealBytes({ peer: host.peerId, holder, states: idx.map((i) => items[i]!.stateHash) }))).toString('hex') })))
        return { answers: items.map(() => ({ sealed: true })), seals }
      },
      'claims.release': async (req, ctx) => behaviour() === 'hang' ? await hangUntilAborted(ctx) : { freed: Array.isArray(req?.stateHashes) ? req.stateHashes.length : 0 },
      // the attacker's claims never end: their transactions are always "pending"
      'claims.status': async (_req, ctx) => behaviour() === 'hang' ? await hangUntilAborted(ctx) : { outcome: 'pending' as const },
      'markers.get': async (_req, ctx) => behaviour() === 'hang' ? await hangUntilAborted(ctx) : closerless,
      'markers.put': async (_req, ctx) => behaviour() === 'hang' ? await hangUntilAborted(ctx) : closerless,
      'markers.getMany': async (req, ctx) => behaviour() === 'hang' ? await hangUntilAborted(ctx) : { answers: (req?.stateHashes ?? []).map(() => ({ closer: [] })), addrs: {} },
      'markers.putMany': async (req, ctx) => behaviour() === 'hang' ? await hangUntilAborted(ctx) : { answers: (req?.items ?? []).map(() => ({ closer: [] })), addrs: {} }
    }
    const rpc = createRpc<AttackerMethods>({ host, handlers, timeoutMs: 5000, handlerTimeoutMs: 120_000 })
    await rpc.start()
    peer = new AttackerPeer(host, rpc as unknown as Rpc<AttackerMethods>, o.behaviour ?? 'grant')
    return peer
  }

  private saw (c: SeenClaim): void {
    this.seen.push(c)
    if (this.seen.length > 10_000) this.seen.splice(0, 5_000)
    for (const l of this.listeners) l(c)
  }

  /** Called for every claim a node asks of this peer. */
  onClaim (l: (c: SeenClaim) => void): () => void {
    this.listeners.push(l)
    return () => { this.listeners = this.listeners.filter((x) => x !== l) }
  }

  /**
   * Connects to every address (a node's multiaddr with /p2p/); answers the peer ids. A node takes
   * only so many inbound handshakes at once (libp2p's `maxIncomingPendingConnections`, 10) and
   * resets the rest: twenty peers joining one node at the same moment had about half of their
   * dials reset. So the owner's peers of this process pace their dials (`dialSlots`: a few at a
   * time to one node, a dozen in all, since every handshake costs this process too), and a dial
   * reset or timed out is tried again after a growing random pause until `deadlineMs` (an attacker
   * is patient; on a loaded machine a handshake may take seconds).
   */
  async connect (multiaddrs: readonly string[], o: { deadlineMs?: number } = {}): Promise<string[]> {
    const deadline = Date.now() + (o.deadlineMs ?? 600_000)
    return await Promise.all(multiaddrs.map(async (a) => await this.dialUntil(a, deadline)))
  }

  /**
   * As `connect`, but a node this peer could not join by the deadline is left out instead of
   * failing the whole: the links made and those that were not (an owner whose peers reach only
   * some nodes still attacks with those).
   */
  async connectSome (multiaddrs: readonly string[], o: { deadlineMs?: number } = {}): Promise<{ joined: string[], missed: string[] }> {
    const deadline = Date.now() + (o.deadlineMs ?? 600_000)
    const res = await Promise.allSettled(multiaddrs.map(async (a) => await this.dialUntil(a, deadline)))
    return {
      joined: res.flatMap((r) => r.status === 'fulfilled' ? [r.value] : []),
      missed: multiaddrs.filter((_, i) => res[i]!.status === 'rejected')
    }
  }

  private async dialUntil (addr: string, deadline: number): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        dialStats.made++
        return await dialSlots.run(addr, async () => {
          // a dial whose turn came after the deadline is not made: queued behind the others' slots,
          // the Sybils' 300 dials ran a second each for half a minute past a 15 s deadline
          if (Date.now() >= deadline) throw new RbtError(ErrorCode.TIMEOUT, `dial ${addr}: its turn came after the deadline`)
          return await this.host.dial(addr, { timeoutMs: Math.max(1000, Math.min(30_000, deadline - Date.now())) })
        })
      } catch (e) {
        dialStats.failed++
        const pause = Math.min(2000, 200 * 2 ** attempt) * (0.5 + Math.random())
        const again = e instanceof RbtError && (e.code === ErrorCode.PEER_UNREACHABLE || e.code === ErrorCode.TIMEOUT)
        if (!again || Date.now() + pause >= deadline) throw e
        await new Promise((resolve) => setTimeout(resolve, pause))
      }
    }
  }

  async claim (peer: string, items: ClaimItem[], timeoutMs = 5000): Promise<ClaimAnswer[]> {
    return (await this.rpc.call(peer, 'claims.claim', { items }, { timeoutMs })).answers
  }

  async release (peer: string, txid: string, stateHashes: string[], timeoutMs = 5000): Promise<number> {
    return (await this.rpc.call(peer, 'claims.release', { txid, stateHashes }, { timeoutMs })).freed
  }

  /**
   * Case 1 of the cheating owner: pushes every other claimant of `txid` out of the arbiter's
   * record of `stateHash` (16 claims of the same transaction under 16 made-up quorum strings), then
   * releases it: what the arbiter answers for the release (states freed), or -1 on an error.
   */
  async evict (peer: string, txid: string, stateHash: string, via?: string): Promise<number> {
    try {
      const items = Array.from({ length: 16 }, (_, i) => ({ txid, quorum: `evict-${i}-${this.peerId.slice(-6)}`, stateHash, ...(via !== undefined ? { via } : {}) }))
      await this.claim(peer, items)
      return await this.release(peer, via ?? txid, [stateHash])
    } catch { return -1 }
  }

  /** Case 6: a stranger's claim of `stateHashes` for a made-up transaction, at `peer` (granted states are pinned for as long as the arbiter keeps the claim). */
  async pin (peer: string, stateHashes: string[]): Promise<number> {
    try {
      const txid = randomBytes(32).toString('hex')
      const answers = await this.claim(peer, stateHashes.map((stateHash) => ({ txid, quorum: `pin-${this.peerId.slice(-6)}`, stateHash })))
      return answers.filter((a) => a.granted).length
    } catch { return 0 }
  }

  async stop (): Promise<void> {
    await this.rpc.stop().catch(() => {})
    await this.host.stop().catch(() => {})
  }
}

/**
 * Case 5: `count` Ed25519 keys whose peer ids are closer to the key of `stateHash`'s spent marker
 * (the key a state's arbiters are counted from) than every peer of `beat`, ground offline. Answers
 * the keys and how many were generated.
 */
export async function grindPeerKeys (stateHash: string, count: number, beat: readonly string[], maxTries = 200_000): Promise<{ keys: PrivateKey[], tries: number }> {
  const target = kadKey(spentKeyBytes(stateHash))
  const honest = beat.map((p) => kadPeerKey(p)).sort((a, b) => compareDistance(target, a, b))
  const bound = honest[0]
  const keys: PrivateKey[] = []
  let tries = 0
  while (keys.length < count && tries < maxTries) {
    tries++
    const k = await generateKeyPair('Ed25519')
    const id = kadPeerKey(peerIdFromPrivateKey(k).toString())
    if (bound === undefined || compareDistance(target, id, bound) < 0) keys.push(k)
  }
  return { keys, tries }
}
