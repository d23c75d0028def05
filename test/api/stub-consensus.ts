import type { ApiServices } from '../../src/api/server/services.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'

/** A consensus API for app tests that do not exercise transactions. */
export function unusedConsensus (): Pick<ApiServices, 'consensus'> {
  const no = async (): Promise<never> => { throw new RbtError(ErrorCode.NOT_FOUND, 'consensus not wired in this test') }
  return {
    consensus: {
      quorumsAdd: no, quorumsList: () => [], quorumsRemoveAll: no, quorumsSetup: no, quorumStatus: no, transfer: no,
      transactions: no, transaction: no, byDid: no, byComment: no, byDidRole: no, faucet: no
    }
  }
}
