/**
 * Records kept for tokens, their chain blocks and transactions, and the names of the collections
 * that hold them. Amounts are integer milli-RBT everywhere (see tokenchain/amount.ts).
 * docs/decisions/0003-token-storage.md describes the layout.
 */

/** Token statuses with the reference's numeric codes (core/wallet/token.go order). */
export const TokenStatus = {
  Free: 'Free',
  Locked: 'Locked',
  Pledged: 'Pledged',
  UnPledged: 'UnPledged',
  Transferred: 'Transferred',
  Committed: 'Committed',
  Generated: 'Generated',
  Deployed: 'Deployed',
  Fetched: 'Fetched',
  Burnt: 'Burnt',
  Executed: 'Executed',
  Orphaned: 'Orphaned',
  ChainSyncIssue: 'ChainSyncIssue',
  PledgeIssue: 'PledgeIssue',
  BeingDoubleSpent: 'BeingDoubleSpent',
  PinnedAsService: 'PinnedAsService',
  BurntForFT: 'BurntForFT'
} as const
export type TokenStatus = typeof TokenStatus[keyof typeof TokenStatus]

const STATUS_ORDER: readonly TokenStatus[] = Object.values(TokenStatus)
export const tokenStatusCode = (s: TokenStatus): number => STATUS_ORDER.indexOf(s)
export const tokenStatusFromCode = (n: number): TokenStatus | undefined => STATUS_ORDER[n]
export const isTokenStatus = (s: unknown): s is TokenStatus => typeof s === 'string' && (STATUS_ORDER as readonly string[]).includes(s)

/** What a token is. `part` tokens count toward the RBT balance. */
export type TokenKindName = 'rbt' | 'part' | 'ft' | 'nft' | 'sc'
/** Balance family: rbt (whole and part tokens), ft, nft, sc. */
export type TokenFamily = 'rbt' | 'ft' | 'nft' | 'sc'
export const familyOf = (k: TokenKindName): TokenFamily => k === 'part' ? 'rbt' : k

export interface TokenRecord {
  tokenId: string
  kind: TokenKindName
  /** Wire token type (tokenchain TokenType: 3 test RBT, 5 test part, …). */
  tokenType: number
  /** Value in milli-RBT. */
  value: number
  /** DID that owns the token after its latest block (or holds it, for Pledged/Locked). */
  owner: string
  status: TokenStatus
  /** Parent token of a part token. */
  parent?: string
  latestBlockId: string
  latestBlockNumber: number
  /** Transaction that produced the current state. */
  txId?: string
  /** FT name and creator, FTs only. */
  ftName?: string
  creator?: string
  createdAt: number
  updatedAt: number
}

/** One block of one token's chain: a readable summary plus the key of the stored envelope. */
export interface BlockRecord {
  tokenId: string
  number: number
  blockId: string
  hash: string
  transactionType: string
  owner: string
  signers: string[]
  txId?: string
  sender?: string
  receiver?: string
  comment?: string
  /** Value written in the block ("10"), milli-RBT. */
  value?: number
  childTokens?: string[]
  epoch?: number
  /** Key of the envelope in the block-bodies collection (shared by every token the block carries). */
  bodyKey: string
  /** When this node stored the block (ms). */
  storedAt?: number
}

export type TxKind = 'mint' | 'split' | 'transfer' | 'receive' | 'pledge' | 'unpledge' | 'ingest'

export interface TransactionRecord {
  txId: string
  kind: TxKind
  /** Block transaction type code ("05", "02", …). */
  transactionType: string
  initiator: string
  receiver?: string
  tokens: string[]
  /** Total value moved or created, milli-RBT. */
  amount: number
  comment?: string
  /** Free text state for multi-phase transactions; "committed" for one-step ones. */
  status: string
  blockIds: string[]
  /** Unix seconds. */
  epoch: number
  createdAt: number
  updatedAt: number
  /** Anything a later phase needs (contract bytes, quorum list, …). */
  extra?: Record<string, unknown>
}

/** Per-DID totals, updated in the same batch as every token change. */
export interface BalanceRecord {
  did: string
  /** family → status → milli-RBT */
  sums: Partial<Record<TokenFamily, Partial<Record<TokenStatus, number>>>>
  /** family → status → token count */
  counts: Partial<Record<TokenFamily, Partial<Record<TokenStatus, number>>>>
  /** Free FTs grouped by "<name>\u0000<creator>" */
  ftGroups: Record<string, { name: string, creator: string, count: number, value: number }>
  updatedAt: number
}

export const emptyBalance = (did: string): BalanceRecord => ({ did, sums: {}, counts: {}, ftGroups: {}, updatedAt: 0 })

/** Collection names (one LevelDB sublevel each). */
export const Collections = {
  tokens: 'tokens',
  tokenContent: 'token-content',
  blocks: 'blocks',
  blockBodies: 'block-bodies',
  transactions: 'txs',
  txByDid: 'tx-by-did',
  ownerIndex: 'owner-tokens',
  balances: 'balances',
  mintIndex: 'mint-index',
  freeFts: 'ft-free'
} as const

/** Block numbers are zero-padded to 16 digits so a token's blocks iterate in order. */
export const blockKey = (tokenId: string, n: number): string => `${tokenId}/${String(n).padStart(16, '0')}`
export const ownerKey = (did: string, family: TokenFamily, status: TokenStatus, tokenId: string): string => `${did}/${family}/${status}/${tokenId}`
export const ownerPrefix = (did: string, family?: TokenFamily, status?: TokenStatus): string =>
  family === undefined ? `${did}/` : status === undefined ? `${did}/${family}/` : `${did}/${family}/${status}/`
export const txByDidKey = (did: string, epoch: number, txId: string): string => `${did}/${String(epoch).padStart(12, '0')}/${txId}`
export const mintIndexKey = (did: string, index: number): string => `${did}/${String(index).padStart(16, '0')}`

/**
 * Free FTs by holder, name and creator, in the order an FT transfer takes them (latest block, then
 * token id): `<did>␀<name>␀<creator>␀<latest block id>␀<token id>`. NUL separates the parts, so a
 * name may hold any other character.
 */
export const freeFtKey = (did: string, name: string, creator: string, blockId: string, tokenId: string): string =>
  `${freeFtPrefix(did, name, creator)}${blockId}\u0000${tokenId}`
export const freeFtPrefix = (did: string, name: string, creator: string): string => `${did}\u0000${name}\u0000${creator}\u0000`
/** Marks a store whose free-FT index is complete (written by the build that fills it for older data dirs). */
export const FREE_FT_INDEX_VERSION_KEY = '\u0000version'
/** The free-FT index key of a token record, or undefined when the token is not a Free FT. */
export const freeFtKeyOf = (r: TokenRecord): string | undefined =>
  r.kind === 'ft' && r.status === TokenStatus.Free ? freeFtKey(r.owner, r.ftName ?? '', r.creator ?? '', r.latestBlockId, r.tokenId) : undefined

/** Value kept in the owner index. */
export interface OwnerIndexEntry { value: number, tokenType: number, kind: TokenKindName }
