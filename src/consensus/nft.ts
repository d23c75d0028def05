/**
 * NFT operations carried by the transfer protocol (docs/protocol.md, "NFTs"): a deploy starts an
 * NFT's chain with a "09" block, an execution appends a "10" block with new data, and the same "10"
 * block hands the NFT to a new owner when ownership is transferred. Deploys, executions and
 * transfers go through the same votes, pledges, signatures and two-phase records as RBT.
 */
import { createBlock, genesisEntry, nextTokenEntry, type Block, type BlockContent, type CreditSignature, type PledgeToken, type TransTokenEntry } from '../tokenchain/block.js'
import { cidV0ForContent, goIndentedJson, nftTokenId } from '../tokenchain/token-id.js'
import { TokenType, TransactionType, tokenKindOf } from '../tokenchain/types.js'
import type { NftOp } from './types.js'

export type { NftOp, NftOpKind } from './types.js'

/** NFT token type on the wire. */
export const NFT_TOKEN_TYPE: number = TokenType.NFT

export const isNftTokenType = (t: number): boolean => tokenKindOf(t) === 'nft'

/** Token type of the operation's token: an NFT or a smart contract. */
export const opTokenType = (op: NftOp): number => op.sc !== undefined ? TokenType.SMART_CONTRACT : NFT_TOKEN_TYPE

/** Child NFT id: CIDv0 of the indented JSON {DID, ParentNFT, Nonce}. */
export const childNftId = (creatorDid: string, parentId: string, nonce: string): string =>
  cidV0ForContent(goIndentedJson([['DID', creatorDid], ['ParentNFT', parentId], ['Nonce', nonce]]))

/** Does `op` name an id the initiator may deploy? Top-level: id = f(DID, artifact hash); child: id = f(DID, parent, nonce). */
export function deployIdMatches (op: Pick<NftOp, 'nftId' | 'parentId' | 'artifactHash' | 'nonce'>, deployer: string): boolean {
  if (op.parentId !== undefined && op.parentId !== '') return op.nonce !== undefined && childNftId(deployer, op.parentId, op.nonce) === op.nftId
  return op.artifactHash !== undefined && op.artifactHash !== '' && nftTokenId(deployer, op.artifactHash) === op.nftId
}

export interface NftBlockInput {
  op: NftOp
  sender: string
  receiver: string
  memo: string
  txid: string
  contract: Uint8Array
  contractHash: string
  keySig: string
  shareSig: string
  credits: CreditSignature[]
  pledgeDetails: Record<string, PledgeToken[]>
  epoch: number
  /** the NFT's latest block (execute only) */
  previous?: Block
}

/** The "09" (deploy) or "10" (execute/transfer) block of an NFT transaction, before the quorums sign it. */
export function nftBlock (i: NftBlockInput): Block {
  const { op } = i
  let entry: TransTokenEntry
  let genesis: BlockContent['genesis']
  if (op.op === 'deploy') {
    entry = genesisEntry(opTokenType(op))
    const info: NonNullable<BlockContent['genesis']>['info'][string] = { level: 0, number: 0, committedTokens: {} }
    if (op.parentId !== undefined && op.parentId !== '') info.parentId = op.parentId
    genesis = { type: TransactionType.GENERATED, info: { [op.nftId]: info } }
  } else {
    if (i.previous === undefined) throw new Error('an NFT execution needs the previous block')
    entry = nextTokenEntry(i.previous, op.nftId)
  }
  return createBlock({
    transactionType: op.op === 'deploy' ? TransactionType.DEPLOYED : TransactionType.EXECUTED,
    owner: i.receiver,
    genesis,
    transInfo: { sender: i.sender, receiver: i.receiver, comment: i.memo, tid: i.txid, tokens: { [op.nftId]: entry } },
    smartContract: i.contract,
    quorumSignatures: i.credits,
    pledgeDetails: i.pledgeDetails,
    tokenValue: op.valueMilli / 1000,
    childTokens: [],
    initiatorSignature: { hash: i.contractHash, signType: i.shareSig === '' ? 0 : 1, initiatorDid: i.sender, privSignature: i.keySig, nlssShareSignature: i.shareSig },
    ...(op.sc !== undefined ? { smartContractData: op.sc.record } : { nftData: op.data }),
    epoch: i.epoch
  })
}

/**
 * Why a chain announced as a child of `parentId` must not be listed as one (undefined: it may be).
 * The announcement is never trusted: the child's first block must be its deploy genesis naming that
 * parent, and its minter must be one of the parent's owners on the chain the checking node holds.
 * Signatures (initiator and quorums) are checked separately when the chain is ingested.
 */
export function childLinkProblem (parentId: string, childId: string, genesis: Block, parentOwners: ReadonlySet<string>): string | undefined {
  if (childId === parentId) return 'an NFT cannot be its own child'
  if (genesis.content.transactionType !== TransactionType.DEPLOYED) return `child NFT ${childId}: the chain does not start with a deploy block`
  const info = genesis.content.genesis?.info[childId]
  if (info === undefined) return `child NFT ${childId}: the first block is not its genesis`
  if ((info.parentId ?? '') !== parentId) return `child NFT ${childId} names parent ${info.parentId ?? '(none)'}, not ${parentId}`
  if (!parentOwners.has(genesis.content.owner)) return `child NFT ${childId} was minted by ${genesis.content.owner}, who never owned the parent ${parentId}`
  return undefined
}
