import type { TokenApi } from '../../src/api/server/services.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'

/** A token service for app tests that do not exercise tokens. */
export function unusedTokens (): { tokens: TokenApi } {
  const no = async (): Promise<never> => { throw new RbtError(ErrorCode.NOT_FOUND, 'tokens not wired in this test') }
  return { tokens: { generateLocalRbt: no, balances: no, rbtBalance: no, ftBalance: no, nftBalance: no, list: no, chain: no, accountInfo: no } }
}
