/**
 * The consensus protocol's rpc methods (docs/protocol.md, "Transfer") and the transport that routes
 * each message either to a local service (the DID is hosted here) or to the peer hosting the DID.
 */
import type { RpcClient, RpcHandlers, UnarySpec } from '../../p2p/rpc.js'
import type {
  AbortRequest, ChainBundle, ConsensusTransport, DeliverReply, DeliverRequest, FinalizeRequest, OutcomeReply, OutcomeRequest,
  PrepareReply, PrepareRequest, SignReply, SignRequest, SpentState
} from '../../consensus/messages.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { decodeBlockEnvelope } from '../../tokenchain/block.js'
import { equalBytes } from '../../tokenchain/cbor.js'
import { isValidDid } from '../../wallet/did-string.js'
import { gunzipSync, gzipSync } from 'node:zlib'
import { BoundedSet } from '../../util/lru.js'
import type { ConsensusService } from './consensus-service.js'
import type { UnpledgeProof } from '../../consensus/unpledge-pow.js'

export interface ConsensusMethods {
  'cs.prepare': UnarySpec<PrepareRequest, PrepareReply>
  'cs.sign': UnarySpec<SignRequest, SignReply>
  'cs.finalize': UnarySpec<FinalizeRequest, { ok: true }>
  'cs.abort': UnarySpec<AbortRequest, { ok: true }>
  'cs.deliver': UnarySpec<DeliverRequest, DeliverReply>
  'cs.outcome': UnarySpec<OutcomeRequest, OutcomeReply>
  /**
   * `quorums`: the receiver's node accepts only these signers (its strict rule, trustOwnQuorumList);
   * `deliverZ`: it reads a delivery whose block is compressed and whose contract is the block's own
   * (see packDeliver)
   */
  'cs.probe': UnarySpec<{ did: string }, { hosted: boolean, quorums?: string[], deliverZ?: boolean }>
  /** of the states a transaction spends, the tokens the receiver's node holds there (see ConsensusTransport.receiverHolds) */
  'cs.holds': UnarySpec<{ did: string, states: SpentState[] }, { held: string[] }>
  'quorum.status': UnarySpec<{ did: string }, { setup: boolean }>
  'faucet.request': UnarySpec<{ did: string, count: number }, { txid: string, count: number }>
  /** the proof of work this node stored when it released `token` of the pledge for `txid` */
  'cs.powProof': UnarySpec<{ token: string, txid: string }, { proof: UnpledgeProof | null }>
}

const TXID_RE = /^[0-9a-f]{64}$/
/** Most token states one cs.holds asks about (a transaction spends at most this many tokens in practice). */
const MAX_HELD_STATES = 100_000

function need (cond: boolean, what: string): void {
  if (!cond) throw new RbtError(ErrorCode.INVALID_INPUT, `malformed consensus message: ${what}`)
}
const isBytes = (v: unknown): v is Uint8Array => v instanceof Uint8Array
function checkTx (r: { txid?: unknown }): void { need(typeof r?.txid === 'string' && TXID_RE.test(r.txid), 'txid') }
function checkDid (v: unknown, what: string): void { need(typeof v === 'string' && isValidDid(v), what) }
/**
 * Wire form of a chain bundle: every distinct envelope once in `blocks`, each chain as indexes
 * into it (`refs`), so a block shared by many tokens (a transfer or a genesis of many FTs)
 * travels once. A bundle without `refs` is read as plain chains.
 */
interface WireBundle extends ChainBundle { blocks?: Uint8Array[], refs?: Record<string, number[]>, blocksZ?: Uint8Array }

/** Bundles whose blocks add up to more than this travel gzip-compressed (`blocksZ`). */
const COMPRESS_ABOVE = 64 * 1024
/**
 * zlib's fastest level: a 2 MB bundle of 300 parts deflates in 18 ms instead of 30 (default level)
 * to 4 % more bytes, and each PREPARE and delivery waits for its compression.
 */
const GZIP = { level: 1 }
const MAX_INFLATED = 64 * 1024 * 1024

/**
 * `blocks` as one gzip stream of length-prefixed envelopes (`blocksZ`) when they are large: token
 * ids, DIDs and block ids repeat across the blocks of many FTs, so a 1,000-FT bundle shrinks to a
 * fraction and stays well inside one frame.
 */
const compressed = new WeakMap<WireBundle, WireBundle>()
export function compressBundle (w: WireBundle): WireBundle {
  if (w.blocks === undefined) return w
  const hit = compressed.get(w)
  if (hit !== undefined) return hit
  const total = w.blocks.reduce((n, b) => n + b.byteLength, 0)
  if (total <= COMPRESS_ABOVE) return w
  const parts: Uint8Array[] = []
  for (const b of w.blocks) {
    const len = new Uint8Array(4)
    new DataView(len.buffer).setUint32(0, b.byteLength)
    parts.push(len, b)
  }
  const { blocks: _b, ...rest } = w
  const out: WireBundle = { ...rest, blocksZ: new Uint8Array(gzipSync(Buffer.concat(parts), GZIP)) }
  compressed.set(w, out)
  return out
}

/**
 * A large byte field (`contract` of cs.prepare, `block` of cs.sign and cs.finalize) travels as
 * `<field>Z`, gzip-compressed, with the field itself empty.
 */
const squeezed = new WeakMap<Uint8Array, Uint8Array>()
export function squeeze<R extends object> (r: R, field: keyof R & string): R {
  const v = r[field] as unknown
  if (!(v instanceof Uint8Array) || v.byteLength <= COMPRESS_ABOVE) return r
  // the same contract or block goes to every quorum: compressed once
  let z = squeezed.get(v)
  if (z === undefined) { z = new Uint8Array(gzipSync(v, GZIP)); squeezed.set(v, z) }
  return { ...r, [field]: new Uint8Array(0), [`${field}Z`]: z }
}

function unsqueeze<R extends object> (r: R, field: keyof R & string): R {
  const z = (r as Record<string, unknown>)[`${field}Z`]
  if (z === undefined) return r
  need(isBytes(z), `${field}Z`)
  let raw: Buffer
  try { raw = gunzipSync(z as Uint8Array, { maxOutputLength: MAX_INFLATED }) } catch { return need(false, `${field}Z does not inflate`) as never }
  const { [`${field}Z`]: _z, ...rest } = r as Record<string, unknown>
  return { ...rest, [field]: new Uint8Array(raw) } as R
}

/** The `blocks` of a compressed wire bundle (bounded: at most 64 MiB once inflated). */
function inflateBundle (b: ChainBundle): WireBundle {
  const w = b as WireBundle
  if (w.blocksZ === undefined) return w
  need(isBytes(w.blocksZ) && w.blocks === undefined, 'bundle blocksZ')
  let raw: Buffer
  try { raw = gunzipSync(w.blocksZ, { maxOutputLength: MAX_INFLATED }) } catch { return need(false, 'bundle blocksZ does not inflate') as never }
  const blocks: Uint8Array[] = []
  for (let at = 0; at < raw.byteLength;) {
    need(at + 4 <= raw.byteLength, 'bundle blocksZ framing')
    const len = raw.readUInt32BE(at)
    need(at + 4 + len <= raw.byteLength, 'bundle blocksZ framing')
    blocks.push(new Uint8Array(raw.subarray(at + 4, at + 4 + len)))
    at += 4 + len
  }
  const { blocksZ: _z, ...rest } = w
  return { ...rest, blocks }
}

const packed = new WeakMap<ChainBundle, WireBundle>()
export function packBundle (b: ChainBundle): WireBundle {
  const hit = packed.get(b)
  if (hit !== undefined) return hit
  const index = new Map<Uint8Array, number>()
  const blocks: Uint8Array[] = []
  const refs: Record<string, number[]> = {}
  for (const [id, chain] of Object.entries(b.chains)) {
    refs[id] = chain.map((env) => {
      let i = index.get(env)
      if (i === undefined) { i = blocks.length; blocks.push(env); index.set(env, i) }
      return i
    })
  }
  const out: WireBundle = { chains: {}, contents: b.contents, blocks, refs }
  packed.set(b, out)
  return out
}

/** Plain chains from a wire bundle (shape-checked first); a shared block becomes one shared array. */
export function unpackBundle (b: ChainBundle): ChainBundle {
  const w = inflateBundle(b)
  if (w.refs === undefined) return b
  need(Array.isArray(w.blocks) && w.blocks.every(isBytes) && typeof w.refs === 'object' && w.refs !== null, 'bundle blocks')
  const chains: Record<string, Uint8Array[]> = { ...b.chains }
  for (const [id, list] of Object.entries(w.refs)) {
    need(Array.isArray(list) && list.every((i) => Number.isSafeInteger(i) && i >= 0 && i < w.blocks!.length), 'bundle refs')
    chains[id] = list.map((i) => w.blocks![i])
  }
  return { chains, contents: w.contents }
}

/**
 * A delivery on the wire: when the new block is one of the bundle's blocks and embeds the contract
 * (always, for transfers), `block` and `contract` travel as empty byte strings plus `blockRef`.
 * Otherwise (every token delivered without its chain, the receiver's node holding them), to a
 * receiver whose probe answered `deliverZ`, the block travels compressed (`blockZ`) and the
 * contract it embeds as an empty byte string with `contractInBlock`: a 300-part delivery, over the
 * 256 KB a request may take on the peer's channel, needed a stream of its own and took 40 to 60 ms
 * on the wire where the one-part one took 4; compressed it is about 160 KB.
 */
export function packDeliver (r: DeliverRequest, squeezed = false): DeliverRequest & { blockRef?: number, contractInBlock?: true } {
  const bundle = packBundle(r.bundle)
  const i = bundle.blocks!.indexOf(r.block)
  if (i < 0 && !squeezed) return { ...r, bundle }
  const embedded = decodeBlockEnvelope(r.block).content.smartContract
  const own = embedded !== undefined && equalBytes(embedded, r.contract)
  if (i >= 0 && own) return { ...r, bundle, block: new Uint8Array(0), contract: new Uint8Array(0), blockRef: i }
  if (!squeezed) return { ...r, bundle }
  return squeeze(own ? { ...r, bundle, contract: new Uint8Array(0), contractInBlock: true as const } : squeeze({ ...r, bundle }, 'contract'), 'block')
}

const withCompressedBundle = <R extends { bundle: ChainBundle }>(r: R): R => ({ ...r, bundle: compressBundle(r.bundle as WireBundle) })
const withCompressedPledges = <R extends { pledges?: ChainBundle }>(r: R): R => r.pledges === undefined ? r : ({ ...r, pledges: compressBundle(packBundle(r.pledges)) })

function unpackDeliver (r: DeliverRequest & { blockRef?: unknown, contractInBlock?: unknown }): DeliverRequest {
  const w = inflateBundle(r.bundle)
  const bundle = unpackBundle(w)
  if (r.pledges !== undefined) {
    const p = inflateBundle(r.pledges)
    checkBundle(p)
    r = { ...r, pledges: unpackBundle(p) }
  }
  if (r.contractInBlock === true) {
    const contract = decodeBlockEnvelope(r.block).content.smartContract
    need(contract !== undefined, 'the block embeds no contract')
    const { contractInBlock: _c, ...rest } = r
    return { ...rest, bundle, contract: contract! }
  }
  if (r.blockRef === undefined) return { ...r, bundle }
  need(Number.isSafeInteger(r.blockRef) && Array.isArray(w.blocks) && (r.blockRef as number) >= 0 && (r.blockRef as number) < w.blocks.length, 'blockRef')
  const block = w.blocks![r.blockRef as number]!
  const contract = decodeBlockEnvelope(block).content.smartContract
  need(contract !== undefined, 'the referenced block embeds no contract')
  const { blockRef: _ref, ...rest } = r
  return { ...rest, bundle, block, contract: contract! }
}

function checkBundle (b: unknown): void {
  const x = b as { chains?: unknown, contents?: unknown }
  need(x !== null && typeof x === 'object' && typeof x.chains === 'object' && x.chains !== null && typeof x.contents === 'object' && x.contents !== null, 'bundle')
  for (const chain of Object.values(x.chains as Record<string, unknown>)) need(Array.isArray(chain) && chain.every(isBytes), 'bundle chain')
  for (const c of Object.values(x.contents as Record<string, unknown>)) need(typeof c === 'string', 'bundle content')
}

/** Handlers of peers' consensus messages: shapes checked at the boundary, then the domain decides. */
export function consensusRpcHandlers (svc: () => ConsensusService): RpcHandlers<ConsensusMethods> {
  return {
    'cs.prepare': async (r, ctx) => {
      r = unsqueeze(r, 'contract')
      checkTx(r); checkDid(r.quorumDid, 'quorumDid'); need(isBytes(r.contract), 'contract'); checkBundle(r.bundle)
      need(typeof r.senderPeer === 'string', 'senderPeer')
      r = { ...r, bundle: unpackBundle(r.bundle) }
      // the calling peer hosts the sender's DID: fetch its public document from there
      const t0 = Date.now()
      await svc().learnInitiator(r.contract, ctx.peerId)
      const t1 = Date.now()
      const out = await svc().quorum.prepare(r)
      svc().debug(`cs.prepare ${r.txid.slice(0, 12)}: learn ${t1 - t0} ms, prepare ${Date.now() - t1} ms`)
      return out
    },
    'cs.sign': async (r) => { r = unsqueeze(r, 'block'); checkTx(r); checkDid(r.quorumDid, 'quorumDid'); need(isBytes(r.block), 'block'); return await svc().quorum.sign(r) },
    'cs.finalize': async (r) => { r = unsqueeze(r, 'block'); checkTx(r); checkDid(r.quorumDid, 'quorumDid'); need(isBytes(r.block), 'block'); await svc().quorum.finalize(r); return { ok: true as const } },
    'cs.abort': async (r) => { checkTx(r); checkDid(r.quorumDid, 'quorumDid'); await svc().quorum.abort({ ...r, reason: String(r.reason ?? '') }); return { ok: true as const } },
    'cs.deliver': async (r, ctx) => {
      r = unsqueeze(unsqueeze(r, 'block'), 'contract')
      checkTx(r); checkDid(r.receiver, 'receiver'); need(isBytes(r.contract) && isBytes(r.block), 'contract/block'); checkBundle(r.bundle)
      r = unpackDeliver(r)
      await svc().learnInitiator(r.contract, ctx.peerId)
      return await svc().receiver.deliver({ ...r, memo: String(r.memo ?? ''), epoch: Number(r.epoch ?? 0) })
    },
    'cs.outcome': async (r) => { checkTx(r); return { txid: r.txid, ...(await svc().sender.outcome(r.txid)) } },
    'cs.probe': async (r) => {
      checkDid(r?.did, 'did')
      const hosted = await svc().hosts(r.did)
      return hosted ? { hosted, deliverZ: true, ...(await svc().receiver.policy()) } : { hosted }
    },
    'cs.holds': async (r) => {
      checkDid(r?.did, 'did')
      need(Array.isArray(r.states) && r.states.length <= MAX_HELD_STATES && r.states.every((x) => typeof x?.tokenId === 'string' && typeof x.blockId === 'string' && x.tokenId.length <= 256 && x.blockId.length <= 256), 'states')
      return { held: await svc().receiver.holds(r.did, r.states.map((x) => ({ tokenId: x.tokenId, blockId: x.blockId }))) }
    },
    'quorum.status': async (r) => { checkDid(r?.did, 'did'); return { setup: svc().quorum.isSetUp(r.did) } },
    'cs.powProof': async (r) => {
      checkTx(r); need(typeof r.token === 'string' && r.token.length > 0 && r.token.length <= 256, 'token')
      return { proof: await svc().quorum.storedProof(r.token, r.txid) ?? null }
    },
    'faucet.request': async (r) => {
      checkDid(r?.did, 'did'); need(Number.isSafeInteger(r.count) && r.count > 0 && r.count <= 100, 'count')
      return await svc().serveFaucet(r.did, r.count)
    }
  }
}

/**
 * Deadline of one consensus call: the base, plus time for what the other side validates (100 ms
 * per chain of a bundle, 100 ms per 4 KiB of a block), below the 120 s a handler may take.
 */
export function deadlineFor (req: unknown, base: number): number {
  const r = req as { bundle?: { chains?: object, refs?: object }, block?: Uint8Array, blockZ?: Uint8Array }
  const chains = r?.bundle !== undefined ? Object.keys(r.bundle.refs ?? r.bundle.chains ?? {}).length : 0
  // a compressed block counts as four times its compressed size
  const blockBytes = Math.max(r?.block instanceof Uint8Array ? r.block.byteLength : 0, r?.blockZ instanceof Uint8Array ? 4 * r.blockZ.byteLength : 0)
  return Math.min(110_000, base + 100 * chains + 100 * Math.floor(blockBytes / 4096))
}

export interface PeerResolver {
  isLocal: (did: string) => Promise<boolean>
  peerOf: (did: string) => Promise<string>
}

/** Routes consensus messages: local DIDs to the local services, others to their peer over rpc. */
export function consensusTransport (svc: () => ConsensusService, rpc: () => RpcClient<ConsensusMethods> | undefined, peers: PeerResolver, timeoutMs = 30_000): ConsensusTransport {
  const remote = async <M extends keyof ConsensusMethods & string>(did: string, method: M, req: ConsensusMethods[M]['request']): Promise<ConsensusMethods[M]['response']> => {
    const client = rpc()
    if (client === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: the p2p host is down')
    const peer = await peers.peerOf(did)
    return await client.call(peer, method as never, req as never, { timeoutMs: deadlineFor(req, timeoutMs) }) as ConsensusMethods[M]['response']
  }
  // receivers whose node reads compressed deliveries (their last probe said so)
  const squeezable = new BoundedSet(4096)
  return {
    prepare: async (r) => await peers.isLocal(r.quorumDid) ? await svc().quorum.prepare(r) : await remote(r.quorumDid, 'cs.prepare', squeeze({ ...r, bundle: compressBundle(packBundle(r.bundle)) }, 'contract')),
    sign: async (r) => await peers.isLocal(r.quorumDid) ? await svc().quorum.sign(r) : await remote(r.quorumDid, 'cs.sign', squeeze(r, 'block')),
    finalize: async (r) => { if (await peers.isLocal(r.quorumDid)) await svc().quorum.finalize(r); else await remote(r.quorumDid, 'cs.finalize', squeeze(r, 'block')) },
    abort: async (r) => { if (await peers.isLocal(r.quorumDid)) await svc().quorum.abort(r); else await remote(r.quorumDid, 'cs.abort', r) },
    deliver: async (r) => await peers.isLocal(r.receiver) ? await svc().receiver.deliver(r) : await remote(r.receiver, 'cs.deliver', withCompressedPledges(withCompressedBundle(packDeliver(r, squeezable.has(r.receiver))))),
    probeReceiver: async (did) => {
      if (await peers.isLocal(did)) return await svc().receiver.policy()
      const res = await remote(did, 'cs.probe', { did })
      if (!res.hosted) throw new RbtError(ErrorCode.NOT_FOUND, `receiver ${did} is not hosted on the peer it was announced on`)
      if (res.deliverZ === true) squeezable.add(did)
      else squeezable.delete(did)
      const q = res.quorums
      return Array.isArray(q) && q.every((d) => typeof d === 'string') ? { quorums: q } : {}
    },
    receiverHolds: async (did, states) => {
      if (await peers.isLocal(did)) return await svc().receiver.holds(did, states)
      const res = await remote(did, 'cs.holds', { did, states })
      return Array.isArray(res?.held) ? res.held.filter((id): id is string => typeof id === 'string') : []
    },
    outcome: async (peer, r) => {
      const client = rpc()
      if (client === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started')
      return await client.call(peer, 'cs.outcome', r, { timeoutMs: 10_000 })
    }
  }
}
