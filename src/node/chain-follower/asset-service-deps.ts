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
import { consensusLedger } from '../consensus/ledger-adapter.js'
import type { ConsensusComponent } from '../consensus/consensus-component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { SigningComponent } from '../signing/signing-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import type { TokensComponent } from '../tokens/tokens-component.js'

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

/** The ids a node follows (NFTs, smart contracts), kept in a collection across restarts. */
function followedIds (c: { put: (k: string, v: number) => Promise<void>, entries: () => AsyncIterable<[string, number]> }): AssetServiceDeps<unknown>['follows'] {
  return {
    put: async (id) => { await c.put(id, Date.now()) },
    list: async () => { const out: string[] = []; for await (const [k] of c.entries()) out.push(k); return out }
  }
}

/**
 * The deps the NFT and smart-contract components build their services from: the consensus ledger,
 * identity, two-step signing, transactions through the NFT path of consensus, and the followed
 * ids kept in `followsCollection`.
 */
export function assetServiceDeps<Net> (c: { storage: StorageComponent, identity: IdentityComponent, signing: SigningComponent, tokens: TokensComponent, consensus: ConsensusComponent }, network: () => Net | undefined, followsCollection: string, log: Logger): AssetServiceDeps<Net> {
  const { store, tokenLedger, repos } = c.storage
  const identity = c.identity.identity
  return {
    ledger: consensusLedger(store, tokenLedger, repos),
    repos,
    tokens: c.tokens.tokens,
    identity: { isLocal: async (did) => await identity.isLocal(did), record: async (did) => await identity.record(did) },
    twoStep: c.signing.signing,
    transact: async (input, prompt) => await c.consensus.require().nft(input, prompt),
    network,
    follows: followedIds(c.storage.store.collection<number>(followsCollection)),
    log
  }
}
