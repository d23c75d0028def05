/**
 * Messages of the transfer protocol (docs/protocol.md, "Transfer"). Bytes travel as Uint8Array;
 * the rpc layer encodes them. Every message names the transaction id, and every handler is
 * idempotent by it.
 */
import type { CreditSignature, PledgeToken } from '../tokenchain/block.js'
import type { ChainBundle, NftOp, ScCode } from './types.js'
import type { PeerGrant, PeerSeal } from './claim-proofs.js'

export type { ChainBundle } from './types.js'

export interface PrepareRequest {
  txid: string
  quorumDid: string
  /** contract envelope, signed by the sender */
  contract: Uint8Array
  bundle: ChainBundle
  /** the sender's peer, asked for the outcome when this quorum hears nothing */
  senderPeer: string
  epoch: number
  /** NFT transactions: the operation (the contract carries the NFT id, value and data) */
  nft?: NftOp
  /** smart-contract transactions: the contract's descriptor and binary, to run it again */
  scCode?: ScCode
  /**
   * The quorums the sender expects to sign, normally the first five it asks (a hint: the designated
   * network checkers among them start their lookup at once). Older senders list every candidate.
   */
  asked?: string[]
}

export type PrepareReply =
  /**
   * `claim`: this quorum's signed claim proof (a nonce of its own, its signature over claimDigest)
   * and the states it holds (`tokenId@blockId`, each token's last quorum-signed state), for the
   * sender to claim them at their arbiters on its behalf (docs/protocol.md, "Claims"); it signs only
   * with the grants naming it. `claimed`: an older quorum, the designated checker, that claimed itself.
   */
  | { vote: 'yes', quorumDid: string, credit: CreditSignature, pledge: PledgeToken[], pledgeMilli: number, claimed?: boolean, claim?: VoteClaim, grants?: PeerGrant[] }
  /**
   * `missing`: part-token ancestors neither in the bundle nor known to the quorum; PREPARE again with their chains.
   * `code`: why a claim failed (STATE_CLAIMED, STATE_SPENT, CLAIM_UNREACHABLE), `holder` the other transaction when known.
   */
  | { vote: 'no', quorumDid: string, reason: string, conflict?: boolean, missing?: string[], code?: 'STATE_CLAIMED' | 'STATE_SPENT' | 'CLAIM_UNREACHABLE', holder?: string }

/** A quorum's claim proof in its vote: what the sender shows the arbiters for it. */
export interface VoteClaim { nonce: string, sig: string, states: string[] }

/** `grants`: the arbiters' signed grants of this quorum's claim of every state it holds (the sender's claim). */
export interface SignRequest { txid: string, quorumDid: string, block: Uint8Array, grants?: PeerGrant[] }
export interface SignReply {
  quorumDid: string
  signature: string
  /**
   * Evidence of the quorum's pledge: the chains (and part-token ancestry) of the tokens it pledged,
   * ending at the blocks the block's pledge details name. The sender hands them to the receiver,
   * which accepts the block by this evidence rather than by its own quorum list.
   */
  pledgeChains?: ChainBundle
  /** the secret behind the nonce of this quorum's claim: its consent, given with its signature, to seal the claim (docs/protocol.md, "Seals") */
  seal?: string
  /** this node's own seals of the states it holds for the transaction, made as the quorum signed (docs/protocol.md, "Seals") */
  sealed?: PeerSeal[]
}

export interface FinalizeRequest { txid: string, quorumDid: string, block: Uint8Array }
export interface AbortRequest { txid: string, quorumDid: string, reason: string }

export interface DeliverRequest {
  txid: string
  receiver: string
  contract: Uint8Array
  /** the new block, fully signed */
  block: Uint8Array
  /**
   * whole chains including the new block, plus ancestors of part tokens; a token the receiver's
   * node said it holds (receiverHolds) travels without a chain: the new block extends what it stores
   */
  bundle: ChainBundle
  /** the signers' pledge evidence (chains of every pledged token), merged; see SignReply */
  pledges?: ChainBundle
  /** the certificate: the arbiters' signed grants of one signer's claim of every state the block spends (docs/protocol.md, "Claims") */
  grants?: PeerGrant[]
  /** the certificate: the arbiters' sealed grants of every state the block spends and every burnt ancestor (docs/protocol.md, "Seals") */
  seals?: PeerSeal[]
  /** the certificates the sender's node kept for the earlier blocks of the chains (docs/security.md, "Carried certificates") */
  earlier?: PeerSeal[]
  memo: string
  epoch: number
}
/**
 * `accepted: false` only when part-token ancestors were neither in the bundle nor known to the
 * receiver: `missing` names them, and the sender delivers again with their chains.
 */
export type DeliverReply = { txid: string, accepted: true } | { txid: string, accepted: false, missing: string[] }

/** A token and the block id of its state a transaction spends. */
export interface SpentState { tokenId: string, blockId: string }

/** What a receiver's node tells a sender before the decision (docs/protocol.md, "Receiver acceptance"). */
export interface ReceiverPolicy {
  /** set when the receiver's node accepts only these quorums as signers (trustOwnQuorumList) */
  quorums?: string[]
}

export type OutcomeState = 'PREPARING' | 'SIGNING' | 'COMMITTING' | 'COMMITTED' | 'ABORTED' | 'UNKNOWN'
export interface OutcomeRequest { txid: string }
export interface OutcomeReply { txid: string, state: OutcomeState, block?: Uint8Array }

/** How consensus reaches other DIDs; the node routes local DIDs to local handlers. */
export interface ConsensusTransport {
  prepare: (req: PrepareRequest) => Promise<PrepareReply>
  sign: (req: SignRequest) => Promise<SignReply>
  finalize: (req: FinalizeRequest) => Promise<void>
  abort: (req: AbortRequest) => Promise<void>
  deliver: (req: DeliverRequest) => Promise<DeliverReply>
  /**
   * Can the receiver DID be reached (resolves its peer and asks it)? Answers the receiver node's
   * acceptance policy: `quorums` only when that node accepts signers of its own quorum list alone.
   */
  probeReceiver: (did: string) => Promise<ReceiverPolicy>
  /**
   * Which of the tokens a transaction spends the receiver's node holds at the state spent (it stores
   * the chain through that block and validated it): those are delivered without their chains.
   * Absent, or failing (an older node), every chain is delivered.
   */
  receiverHolds?: (did: string, states: SpentState[]) => Promise<string[]>
  /** asks the sender's node for a transaction's outcome */
  outcome: (senderPeer: string, req: OutcomeRequest) => Promise<OutcomeReply>
}
