/** Stand-ins shared by the NFT and smart-contract route tests: an in-memory token ledger and a two-step flow that always asks for the password. */
import type { AssetServiceDeps } from '../../src/node/chain-follower/asset-service-deps.js'
import { silentLogger } from '../../src/util/logger.js'

export function memoryTokenLedger (tokens: Map<string, unknown>): never {
  return {
    token: async (id: string) => tokens.get(id),
    chain: async () => [],
    commit: async (build: (w: unknown) => void) => { build({ putToken: (t: { tokenId: string }) => tokens.set(t.tokenId, t) }) }
  } as never
}

export const passwordNeeded = { start: async () => ({ status: true, message: 'Password needed', result: { id: 'x', mode: 4, hash: null, only_priv_key: false } }) } as never

export const noTokens = { tokens: { all: async function * () {} } } as never

/**
 * The deps the NFT and smart-contract services share, for route tests that never reach consensus
 * or the network: `tokens` backs the ledger, `localDid` is the one DID hosted here.
 */
export function offlineAssetDeps (tokens: Map<string, unknown>, localDid: string): AssetServiceDeps<never> {
  return {
    ledger: memoryTokenLedger(tokens),
    repos: noTokens,
    tokens: {} as never,
    identity: { isLocal: async (did) => did === localDid, record: async () => ({ type: 4 }) },
    twoStep: passwordNeeded,
    transact: async () => { throw new Error('not in this test') },
    network: () => undefined,
    follows: { put: async () => {}, list: async () => [] },
    log: silentLogger
  }
}
