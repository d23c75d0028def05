/**
 * The node's smart-contract service: generate (content-addressed files, checked against ABI v1),
 * deploy and execute through consensus (the contract runs here first, then on every quorum), list,
 * chain with states, subscriptions (a gossipsub topic per contract), fetching files from peers with
 * verification, and callbacks on every new state. It reaches the network only through `ScNetwork`.
 */
import { ok, type Envelope, type PendingSignature } from '../../api/contract/envelope.js'
import type { ScCallbackEvent, ScChainItem, ScListItem, ScTxResult } from '../../api/contract/sc-results.js'
import { ScFileStore, SC_PARTS, type ScPart } from '../../token-files/smart-contracts/sc-files.js'
import { MAX_BINARY_BYTES } from '../../contracts/abi.js'
import type { NftOp } from '../../consensus/nft.js'
import { SC_TOKEN_TYPE, computeScRecord, latestScState, parseScRecord, type ScRunner } from '../../consensus/smart-contract.js'
import { parseTransferAmount } from '../../tokenchain/amount.js'
import { decodeBlockEnvelope } from '../../tokenchain/block.js'
import { isCidV0 } from '../../tokenchain/token-id.js'
import { TransactionType } from '../../tokenchain/types.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { isValidDid } from '../../wallet/did-string.js'
import { followerBase, type AssetServiceDeps } from '../chain-follower/asset-service-deps.js'
import { ChainFollower, followNetwork, requireCore } from '../chain-follower/chain-follower.js'
import type { CallbackDispatcher } from './callbacks.js'
import type { ScEvent, ScNetwork } from './sc-network.js'
import type { ScTxBody } from '../../api/server/services.js'
export type { ScTxBody } from '../../api/server/services.js'

export interface ScServiceDeps extends AssetServiceDeps<ScNetwork> {
  files: ScFileStore
  engine: ScRunner & { check: (binary: Uint8Array) => void | Promise<void> }
  callbacks: CallbackDispatcher
  /** this node's REST port (told in callback events) */
  port: number
}

/** Upload limits of POST /svc/v1/smart_contracts/generate. */
export const SC_UPLOAD_LIMITS = { maxBytes: 2 * 1024 * 1024, maxBinaryBytes: MAX_BINARY_BYTES, maxRawBytes: 1024 * 1024 }

function checkScId (id: string): void {
  if (!isCidV0(id)) throw new RbtError(ErrorCode.INVALID_INPUT, `smart contract id ${JSON.stringify(id)} is not a valid CID (Qm…, 46 characters)`)
}

const hasExtension = (name: string | undefined, ext: string): boolean => name !== undefined && name.toLowerCase().endsWith(ext)

export class ScService {
  private readonly follower: ChainFollower

  constructor (private readonly d: ScServiceDeps) {
    this.follower = new ChainFollower({
      ...followerBase(d),
      what: 'smart contract',
      network: () => followNetwork<ScEvent>(d.network(), (e) => e.smartContractToken),
      check: async (id, chain, heldBefore) => { await this.replay(id, chain, heldBefore) },
      onSynced: (id, chain, heldBefore) => { this.announce(id, chain, heldBefore) }
    })
  }

  private net (): ScNetwork { return requireCore(this.d.network()) }

  async generate (did: string, binary: Uint8Array | undefined, raw: Uint8Array | undefined, names: { binary?: string, raw?: string }): Promise<string> {
    if (!isValidDid(did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
    if (binary === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'Smart contract generation failed: the compiled code is missing (file field "binaryCodePath", a .wasm file)')
    if (raw === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'Smart contract generation failed: the source code is missing (file field "rawCodePath", a .rs file)')
    if (!hasExtension(names.binary, '.wasm')) throw new RbtError(ErrorCode.INVALID_INPUT, `Smart contract generation failed: binaryCodePath must be a .wasm file, got ${JSON.stringify(names.binary ?? '')}`)
    if (!hasExtension(names.raw, '.rs')) throw new RbtError(ErrorCode.INVALID_INPUT, `Smart contract generation failed: rawCodePath must be a .rs file, got ${JSON.stringify(names.raw ?? '')}`)
    if (binary.length > SC_UPLOAD_LIMITS.maxBinaryBytes) throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `Smart contract generation failed: the .wasm file is larger than ${SC_UPLOAD_LIMITS.maxBinaryBytes} bytes`)
    if (raw.length > SC_UPLOAD_LIMITS.maxRawBytes) throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `Smart contract generation failed: the source file is larger than ${SC_UPLOAD_LIMITS.maxRawBytes} bytes`)
    try { await this.d.engine.check(binary) } catch (e) { throw new RbtError(ErrorCode.INVALID_INPUT, `Smart contract generation failed: ${errorMessage(e)}`) }
    if (!await this.d.identity.isLocal(did)) throw new RbtError(ErrorCode.FORBIDDEN, `DID does not have an access: ${did} is not hosted on this node`)
    const f = await this.d.files.create(did, binary, raw)
    if (await this.d.ledger.token(f.scId) === undefined) {
      await this.d.ledger.commit((w) => { w.putToken({ tokenId: f.scId, tokenType: SC_TOKEN_TYPE, valueMilli: 0, owner: did, status: 'Generated', latestBlockId: '', updatedAt: Date.now() }) })
    }
    this.d.network()?.provide(f.scId).catch((e) => { this.d.log.debug(`smart contract ${f.scId}: provide failed: ${errorMessage(e)}`) })
    return f.scId
  }

  async list (): Promise<ScListItem[]> {
    const out: ScListItem[] = []
    for await (const t of this.d.repos.tokens.all()) {
      if (t.kind !== 'sc') continue
      const chain = t.latestBlockId === '' ? [] : await this.d.ledger.chain(t.tokenId)
      const deployer = chain.length > 0 ? decodeBlockEnvelope(chain[0]).content.owner : t.owner
      let state: string | null = null
      try { state = chain.length > 0 ? latestScState(chain) : null } catch { state = null }
      out.push({ smartContractToken: t.tokenId, deployer, value: t.value / 1000, status: t.status, latest_block_id: t.latestBlockId, state, has_files: await this.d.files.has(t.tokenId) })
    }
    return out
  }

  private async envelopes (scId: string): Promise<Uint8Array[]> {
    checkScId(scId)
    const chain = await this.d.ledger.chain(scId)
    if (chain.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `smart contract ${scId} has no chain on this node (unknown or not deployed)`)
    return chain
  }

  async chain (scId: string): Promise<ScChainItem[]> {
    return (await this.envelopes(scId)).map((env) => chainItem(scId, env))
  }

  /** POST /svc/v1/tx with tokens.smartContract: a deploy (the contract is Generated here) or an execution. */
  async transact (body: ScTxBody): Promise<Envelope<ScTxResult | PendingSignature>> {
    if (!isValidDid(body.initiator)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID: initiator')
    if (body.smartContract.length !== 1) throw new RbtError(ErrorCode.INVALID_INPUT, 'one smart contract per transaction: tokens.smartContract must hold exactly one entry')
    const item = body.smartContract[0]
    checkScId(item.smartContractId)
    const id = item.smartContractId
    const data = item.data ?? ''
    const t = await this.d.ledger.token(id)
    if (t === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `smart contract ${id} is not known on this node (generate it here, or subscribe to it)`)
    if (!await this.d.files.has(id) && this.d.network() !== undefined) await this.fetchFiles(id, 2).catch(() => {})
    if (!await this.d.files.has(id)) throw new RbtError(ErrorCode.NOT_FOUND, `smart contract ${id}: its code is not on this node (GET /svc/v1/smart_contracts/fetch)`)
    const { binary } = await this.d.files.code(id)
    let op: NftOp
    let prevState = ''
    if (t.status === 'Generated') {
      op = { op: 'deploy', nftId: id, valueMilli: parseTransferAmount(item.value), data, sc: { record: '', base: '' } }
    } else {
      if (t.latestBlockId === '') throw new RbtError(ErrorCode.NOT_FOUND, `smart contract ${id} is not deployed`)
      prevState = latestScState(await this.d.ledger.chain(id))
      op = { op: 'execute', nftId: id, valueMilli: t.valueMilli, data, sc: { record: '', base: t.latestBlockId } }
    }
    // the call runs here first: a contract that rejects, traps, loops or breaks a limit fails the
    // transaction before anything is locked
    const mine = await computeScRecord(this.d.engine, binary, prevState, data)
    if ('error' in mine) throw new RbtError(ErrorCode.INVALID_INPUT, `Smart contract ${op.op} failed: ${mine.error}`)
    op.sc!.record = mine.record
    const rec = await this.d.identity.record(body.initiator)
    if (rec === undefined) throw new RbtError(ErrorCode.FORBIDDEN, `DID does not have an access: ${body.initiator} is not hosted on this node`)
    const state = parseScRecord(mine.record)!
    return await this.d.twoStep.start(body.initiator, rec.type, async (prompt) => {
      const r = await this.d.transact({ initiator: body.initiator, receiver: body.initiator, op, memo: body.memo ?? '' }, prompt)
      return ok<ScTxResult>(`Transaction ${r.txid} completed successfully`, { transactionID: r.txid, smartContractToken: id, blockId: r.blockId, state: state.state, output: state.output })
    }, `sc-${op.op}`)
  }

  /** After a committed deploy or execution on this node: announce the new state and call back. */
  committed (scId: string, blockId: string, txid: string, initiator: string): void {
    const n = this.d.network()
    this.follower.follow(scId)
    void this.d.follows.put(scId).catch(() => {})
    if (n !== undefined) {
      n.publish(scId, { smartContractToken: scId, blockId, txid, initiator }).catch((e) => { this.d.log.debug(`smart contract ${scId} event: ${errorMessage(e)}`) })
      n.provide(scId).catch(() => {})
    }
    this.d.ledger.chain(scId).then((chain) => { this.announce(scId, chain, chain.length - 1) }).catch(() => {})
  }

  /**
   * A follower's own check of synced states: every new block's record must be what running the
   * contract on the previous state gives (the code is fetched first when missing). Without the code
   * the chain is still taken (its signatures and quorum signatures are validated) and a warning says so.
   */
  private async replay (scId: string, chain: Uint8Array[], from: number): Promise<void> {
    if (!await this.d.files.has(scId)) await this.fetchFiles(scId, 1).catch(() => {})
    if (!await this.d.files.has(scId)) {
      this.d.log.warn(`smart contract ${scId}: states ${from}..${chain.length - 1} taken without running them again (code not available yet)`)
      return
    }
    const { binary } = await this.d.files.code(scId)
    let prev = from === 0 ? '' : (parseScRecord(decodeBlockEnvelope(chain[from - 1]).content.smartContractData)?.state ?? '')
    for (let i = from; i < chain.length; i++) {
      const text = decodeBlockEnvelope(chain[i]).content.smartContractData
      const rec = parseScRecord(text)
      if (rec === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `smart contract ${scId}: block ${i} carries no state record`)
      const mine = await computeScRecord(this.d.engine, binary, prev, rec.data)
      if ('error' in mine || mine.record !== text) throw new RbtError(ErrorCode.CHAIN_INVALID, `smart contract ${scId}: block ${i} records a state this node does not reproduce`)
      prev = rec.state
    }
  }

  /** Callback events for blocks [from, end) of the chain. */
  private announce (scId: string, chain: Uint8Array[], from: number): void {
    for (let i = Math.max(0, from); i < chain.length; i++) {
      const item = chainItem(scId, chain[i])
      const e: ScCallbackEvent = {
        event: 'smart_contract_state',
        smart_contract_hash: scId,
        smartContractToken: scId,
        type: item.transaction_type === TransactionType.DEPLOYED ? 'deploy' : 'execute',
        blockId: item.block_id,
        blockNumber: i,
        transactionId: item.transactionId,
        initiator: item.initiator,
        data: item.data,
        state: item.state,
        stateHash: item.stateHash,
        output: item.output,
        port: this.d.port
      }
      this.d.callbacks.notify(e)
    }
  }

  async registerCallback (url: string, scId: string): Promise<void> {
    checkScId(scId)
    if (await this.d.ledger.token(scId) === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `smart contract ${scId} is not known on this node (generate it here, or subscribe to it)`)
    await this.d.callbacks.register(scId, url)
  }

  async subscribe (scId: string): Promise<void> {
    checkScId(scId)
    this.net()
    await this.d.follows.put(scId)
    this.follower.follow(scId)
    // catch up at once from whoever holds it, and get the code to run it
    this.follower.syncFromAny(scId).catch(() => {})
    if (!await this.d.files.has(scId)) {
      // keeps asking (bounded): right after a deploy the mesh and the DHT records take a moment
      this.fetchFiles(scId, 12).catch((e) => { this.d.log.warn(`smart contract ${scId}: fetching the code: ${errorMessage(e)}`) })
    }
  }

  /** Re-follows the contracts followed before a restart. */
  async resume (): Promise<void> {
    for (const id of await this.d.follows.list()) this.follower.follow(id)
  }

  /** GET /svc/v1/smart_contracts/fetch: the contract's files from the network, verified against the id. */
  async fetch (scId: string): Promise<{ message: string, path: string }> {
    checkScId(scId)
    const folder = this.d.files.folder(scId)
    if (await this.d.files.has(scId)) return { message: 'Smart contract files already exist', path: folder }
    const peer = await this.fetchFiles(scId, 3)
    if (peer !== '') await this.follower.sync(scId, peer).catch((e) => { this.d.log.debug(`smart contract ${scId} chain from ${peer}: ${errorMessage(e)}`) })
    return { message: 'Smart contract fetched successfully', path: folder }
  }

  /** The contract's files from the first peer that has them (verified); the peer ('' when they arrived otherwise meanwhile). */
  private async fetchFiles (scId: string, rounds: number): Promise<string> {
    const n = this.net()
    const errors: string[] = []
    for (let round = 0; round < rounds; round++) {
      for (const peer of await n.candidates(scId)) {
        try {
          const parts: Partial<Record<ScPart, Uint8Array>> = {}
          for (const p of SC_PARTS) parts[p] = await n.fetchPart(peer, scId, p)
          await this.d.files.putVerified(scId, parts as Record<ScPart, Uint8Array>)
          n.provide(scId).catch(() => {})
          return peer
        } catch (e) {
          errors.push(`${peer.slice(0, 12)}…: ${errorMessage(e)}`)
        }
      }
      if (await this.d.files.has(scId)) return ''
      if (round + 1 < rounds) await new Promise((resolve) => setTimeout(resolve, Math.min(1000 * (round + 1), 10_000)))
    }
    throw new RbtError(ErrorCode.NOT_FOUND, `Failed to fetch smart contract ${scId}: ${errors.length === 0 ? 'no peer holds it' : errors.slice(-5).join('; ')}`)
  }

  /** Descriptor and binary for the quorums. */
  async code (scId: string): Promise<{ descriptor: string, binary: Uint8Array }> { return await this.d.files.code(scId) }

  /** Is `id` a contract this node knows (generated, deployed or followed)? */
  async knows (id: string): Promise<boolean> {
    const t = await this.d.ledger.token(id)
    return t !== undefined && t.tokenType === SC_TOKEN_TYPE
  }

  // ---- served to peers
  async servePart (scId: string, part: ScPart): Promise<Uint8Array> { return await this.d.files.read(scId, part) }
  async serveChain (scId: string): Promise<Uint8Array[]> {
    checkScId(scId)
    return await this.d.ledger.chain(scId)
  }
}

function chainItem (scId: string, env: Uint8Array): ScChainItem {
  const b = decodeBlockEnvelope(env)
  const e = b.content.transInfo.tokens[scId]
  const rec = parseScRecord(b.content.smartContractData)
  return {
    transactionId: b.content.transInfo.tid ?? '',
    initiator: b.content.initiatorSignature?.initiatorDid ?? b.content.transInfo.sender ?? b.content.owner,
    epoch: b.content.epoch ?? 0,
    data: rec?.data ?? b.content.smartContractData ?? '',
    block_id: `${e?.blockNumber ?? '0'}-${b.hash}`,
    transaction_type: b.content.transactionType,
    state: rec?.state ?? '',
    output: rec?.output ?? '',
    stateHash: rec?.stateHash ?? ''
  }
}
