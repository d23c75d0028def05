/** Code tables shared by tokens, blocks and contracts (values are the reference's wire numbers). */

export const TokenType = {
  RBT: 0,
  PART: 1,
  NFT: 2,
  TEST_RBT: 3,
  DATA: 4,
  TEST_PART: 5,
  TEST_NFT: 6,
  TEST_DATA: 7,
  SMART_CONTRACT: 8,
  TEST_SMART_CONTRACT: 9,
  FT: 10
} as const
export type TokenType = typeof TokenType[keyof typeof TokenType]

export const TransactionType = {
  MINTED: '01',
  TRANSFERRED: '02',
  MIGRATED: '03',
  PLEDGED: '04',
  GENERATED: '05',
  UNPLEDGED: '06',
  COMMITTED: '07',
  BURNT: '08',
  DEPLOYED: '09',
  EXECUTED: '10',
  CONTRACT_COMMITTED: '11',
  PINNED_AS_SERVICE: '12',
  BURNT_FOR_FT: '13'
} as const
export type TransactionType = typeof TransactionType[keyof typeof TransactionType]

export const RacType = {
  TEST_TOKEN: 0,
  OLD_NFT: 1,
  NFT: 2,
  DATA_TOKEN: 3,
  PART_TOKEN: 4,
  TEST_NFT: 5,
  TEST_DATA_TOKEN: 6,
  TEST_PART_TOKEN: 7,
  FT: 8,
  TEST_FT: 9
} as const
export type RacType = typeof RacType[keyof typeof RacType]

export const ContractType = {
  RBT_DIRECT: 0,
  DID_MIGRATE: 1,
  DATA_TOKEN: 2,
  DATA_TOKEN_COMMIT: 3,
  NFT_SALE: 4,
  SC_DEPLOY: 5,
  NFT_DEPLOY: 6,
  NFT_EXECUTE: 7,
  FT: 8,
  /** a smart-contract execution (the deploy is SC_DEPLOY) */
  SC_EXECUTE: 9
} as const

export const PledgeMode = { PERIODIC: 0, NO_PLEDGE: 1 } as const

/** Coarse token families used by validation. */
export type TokenKind = 'rbt' | 'test-rbt' | 'part' | 'ft' | 'nft' | 'smart-contract' | 'data'

export function tokenKindOf (t: number): TokenKind | undefined {
  switch (t) {
    case TokenType.RBT: return 'rbt'
    case TokenType.TEST_RBT: return 'test-rbt'
    case TokenType.PART: case TokenType.TEST_PART: return 'part'
    case TokenType.FT: return 'ft'
    case TokenType.NFT: case TokenType.TEST_NFT: return 'nft'
    case TokenType.SMART_CONTRACT: case TokenType.TEST_SMART_CONTRACT: return 'smart-contract'
    case TokenType.DATA: case TokenType.TEST_DATA: return 'data'
    default: return undefined
  }
}

const DID_RE = /^bafybmi[a-z2-7]{52}$/
/** The shape every reference DID has: CIDv1 dag-pb sha3-256 in base32, 59 characters. */
export const isDid = (s: unknown): s is string => typeof s === 'string' && DID_RE.test(s)
