/**
 * What the NFT and smart-contract services share: both keep a single-token chain per asset, sign
 * through the two-step engine, run their transactions through the NFT path of consensus and
 * follow announced chains from the network (chain-follower.ts).
 */
import type { Envelope, PendingSignature } from '../../api/contract/envelope.js'
import type { NftOp } from '../../consensus/nft.js'
import type { Ledger } from '../../consensus/ports.js'
import type { TransferResult } from '../../consensus/sender.js'
import type { TokenRepositories } from '../../storage/token-repositories.js'
import type { TokenService } from '../../tokens/token-service.js'
import type { Logger } from '../../util/logger.js'
import type { SignPrompt } from '../../wallet/did-crypto.js'
import type { ChainFollowerDeps } from './chain-follower.js'

export interface AssetServiceDeps<Net> {
  ledger: Ledger
  repos: TokenRepositories
  tokens: TokenService
  identity: { isLocal: (did: string) => Promise<boolean>, record: (did: string) => Promise<{ type: number } | undefined> }
  twoStep: { start: <T>(did: string, mode: number, op: (prompt: SignPrompt) => Promise<Envelope<T>>, operation?: string) => Promise<Envelope<T | PendingSignature>> }
  /** runs a transaction of the asset through consensus */
  transact: (input: { initiator: string, receiver: string, op: NftOp, memo: string }, prompt: SignPrompt) => Promise<TransferResult>
  network: () => Net | undefined
  /** collection of followed asset ids */
  follows: { put: (id: string) => Promise<void>, list: () => Promise<string[]> }
  log: Logger
}

/** The chain-follower deps taken from an asset service's deps as they are. */
export function followerBase (d: AssetServiceDeps<unknown>): Pick<ChainFollowerDeps, 'ledger' | 'tokens' | 'isLocal' | 'log'> {
  return { ledger: d.ledger, tokens: d.tokens, isLocal: async (did) => await d.identity.isLocal(did), log: d.log }
}
