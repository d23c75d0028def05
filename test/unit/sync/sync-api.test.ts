import { expect } from 'chai'
import { createSyncApi } from '../../../src/node/sync/sync-api.js'
import type { SyncService } from '../../../src/node/sync/sync-service.js'
import { ErrorCode, type RbtError } from '../../../src/util/errors.js'

const ALICE = 'bafybmi' + 'a'.repeat(52)
const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'

describe('sync api: the fullnode a caller names', () => {
  const reached: string[] = []
  const sync = {
    recover: async () => { reached.push('recover'); throw new Error('no network here') },
    transactionChains: async () => { reached.push('transactionChains'); return { did: ALICE, chains: [], count: 0, next_cursor: '' } }
  } as unknown as SyncService
  const identity = { record: async () => { reached.push('identity'); return { type: 4 } }, signerFor: async () => { throw new Error('unused') } }
  const twoStep = { start: async () => { reached.push('twoStep'); throw new Error('unused') } }
  const api = createSyncApi(sync, identity as never, twoStep as never)
  const refused = async (p: Promise<unknown>): Promise<RbtError> => { try { await p } catch (e) { return e as RbtError } throw new Error('expected a refusal') }

  it('a malformed fullnode is INVALID_INPUT before identity, signing or the network is reached', async () => {
    for (const fullnode of ['not-a-peer', '/ip4/1.2.3.4/tcp/1', `/dns4/x/tcp/1/p2p/${PEER}/extra`, `${PEER} `]) {
      const e = await refused(api.recover({ did: ALICE, fullnode }))
      expect(e.code, fullnode).to.equal(ErrorCode.INVALID_INPUT)
      expect(e.message).to.match(/^Invalid fullnode: expected a peer id/)
      expect((await refused(api.transactionChains({ did: ALICE, token_ids: [], fullnode } as never))).code).to.equal(ErrorCode.INVALID_INPUT)
    }
    expect(reached).to.deep.equal([])
    // well-formed ones go on
    await api.transactionChains({ did: ALICE, token_ids: [], fullnode: `/ip4/1.2.3.4/tcp/1/p2p/${PEER}` } as never)
    expect(reached).to.deep.equal(['transactionChains'])
  })
})
