import { decodeBlockEnvelope, formatBlockId } from '../tokenchain/block.js'
import { decodeContract } from '../tokenchain/contract.js'
import { floatToMilliExact } from '../tokenchain/amount.js'
import type { VerifiedBlockCache } from '../tokenchain/validate.js'
import { ErrorCode, RbtError } from '../util/errors.js'
import { validateBundleToken } from './bundle.js'
import { KeyedMutex } from './keyed-mutex.js'
import type { DeliverReply, DeliverRequest } from './messages.js'
import type { Clock, Ledger, TokenState, Verifier } from './ports.js'
import { systemClock } from './ports.js'
import { MIN_QUORUM_SIGNATURES } from './quorum-selection.js'
import type { IncomingRecord } from './records.js'
import { ContractType } from '../tokenchain/types.js'
import { carriesFt, ftIdentity } from './ft.js'

export interface ReceiverOptions {
  ledger: Ledger
  verifier: Verifier
  isLocalDid: (did: string) => Promise<boolean>
  /** quorums this node trusts (its quorum list); when non-empty, the block's signers must be in it */
  trustedQuorums: () => Promise<string[]>
  clock?: Clock
  fault?: (step: string) => void
}

/**
 * The receiver's side: verifies the new block (sender's and quorums' signatures) and every token's
 * whole chain before anything is stored, then takes the tokens as Free in one commit. Delivering
 * the same transaction again answers the same.
 */
export class TransferReceiver {
  private readonly clock: Clock
  private readonly locks = new KeyedMutex()
  private readonly cache: VerifiedBlockCache = new Set<string>()

  constructor (private readonly opts: ReceiverOptions) {
    this.clock = opts.clock ?? systemClock
  }

  async deliver (req: DeliverRequest): Promise<DeliverReply> {
    const { ledger } = this.opts
    return await this.locks.run(req.txid, async () => {
      if (await ledger.record<IncomingRecord>('cs-incoming', req.txid) !== undefined) return { txid: req.txid, accepted: true }
      if (!await this.opts.isLocalDid(req.receiver)) throw new RbtError(ErrorCode.NOT_FOUND, `receiver ${req.receiver} is not hosted on this node`)
      const contract = decodeContract(req.contract)
      if (contract.transactionId !== req.txid) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'transaction id is not the hash of the contract')
      const ti = contract.content.transInfo
      if (ti.receiver !== req.receiver) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'the contract pays someone else')
      const block = decodeBlockEnvelope(req.block)
      if (block.content.transInfo.tid !== req.txid || block.content.owner !== req.receiver) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'the block does not hand the tokens to this receiver')
      const signers = Object.keys(block.signatures)
      const trusted = await this.opts.trustedQuorums()
      if (trusted.length > 0) {
        const known = signers.filter((s) => trusted.includes(s))
        if (known.length < MIN_QUORUM_SIGNATURES) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `only ${known.length} of the block's signers are in this node's quorum list, ${MIN_QUORUM_SIGNATURES} needed`)
      }
      const now = this.clock.now()
      const incoming: TokenState[] = []
      let total = 0
      for (const [tokenId, t] of Object.entries(ti.transTokens ?? {})) {
        const chain = req.bundle.chains[tokenId]
        if (chain === undefined || decodeBlockEnvelope(chain[chain.length - 1]).hash !== block.hash) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `chain of ${tokenId} does not end with the new block`)
        // validates every block, including the new one's 5 quorum signatures and the sender's
        const tip = await validateBundleToken(req.bundle, tokenId, this.opts.verifier, this.cache)
        if (tip.owner !== req.receiver) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `token ${tokenId} does not end with this receiver as owner`)
        const value = floatToMilliExact(t.tokenValue)
        if (value === undefined) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `token ${tokenId} has a bad value`)
        total += value
        const genesis = decodeBlockEnvelope(chain[0])
        const parentId = genesis.content.genesis?.info[tokenId]?.parentId
        incoming.push({
          tokenId,
          tokenType: tip.tokenType,
          valueMilli: value,
          owner: req.receiver,
          status: 'Free',
          latestBlockId: tip.blockId,
          parentId: parentId !== undefined && parentId !== '' ? parentId : undefined,
          content: req.bundle.contents[tokenId],
          txid: req.txid,
          ...ftIdentity(tokenId, tip.tokenType, genesis),
          updatedAt: now
        })
      }
      if (incoming.length === 0) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'the contract transfers no token')
      await ledger.commit((w) => {
        for (const [id, chain] of Object.entries(req.bundle.chains)) chain.forEach((b, i) => { w.putBlock(id, i, b) })
        for (const [id, c] of Object.entries(req.bundle.contents)) w.putRecord('cs-contents', id, c)
        for (const t of incoming) w.putToken(t)
        const first = incoming[0]
        w.putTransaction({
          txid: req.txid, tokenType: contract.content.type === ContractType.NFT_EXECUTE ? 'nft' : carriesFt(block) ? 'ft' : 'rbt', sender: ti.sender ?? '', receiver: req.receiver, amountMilli: total, tokens: incoming.map((t) => t.tokenId),
          quorums: signers, memo: req.memo, epoch: req.epoch, role: 'receiver', blockId: first.latestBlockId, status: 'committed'
        })
        w.putRecord('cs-incoming', req.txid, { txid: req.txid, receiver: req.receiver, sender: ti.sender ?? '', at: now } satisfies IncomingRecord)
      })
      this.opts.fault?.('received')
      return { txid: req.txid, accepted: true }
    })
  }
}

