import { LazyContractEngine } from '../../contracts/lazy-engine.js'
import { ScFileStore } from '../../token-files/smart-contracts/sc-files.js'
import { errorMessage } from '../../util/errors.js'
import { assetServiceDeps } from '../chain-follower/asset-service-deps.js'
import type { Component, Factory } from '../component/component.js'
import type { ConsensusComponent } from '../consensus/consensus-component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { SigningComponent } from '../signing/signing-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import type { TokensComponent } from '../tokens/tokens-component.js'
import { CallbackDispatcher } from './callbacks.js'
import { createScNetwork, scRpcHandlers, type ScNetwork } from './sc-network.js'
import { ScService } from './sc-service.js'

/** Smart contracts: files, the WASM engine, consensus operations, subscriptions, callbacks (docs/contracts.md). */
export interface SmartContractsComponent extends Component {
  contracts: ScService
}

type Needs = { storage: StorageComponent, identity: IdentityComponent, signing: SigningComponent, tokens: TokensComponent, consensus: ConsensusComponent }

export const smartContractsComponent: Factory<Needs, SmartContractsComponent> = (c) => {
  const { options, log, ownPorts } = c.base
  let network: ScNetwork | undefined
  const engine = new LazyContractEngine()
  const stored = c.storage.store.collection<string[]>('sc-callbacks')
  const callbacks = new CallbackDispatcher({
    store: { get: async (id) => await stored.get(id), put: async (id, urls) => { await stored.put(id, urls) } },
    log: log.child('callback'),
    // never a callback target on a local address: the API and release-2.6 ports, as configured and as bound
    ownPorts: () => [options.apiPort, options.legacyPort, ...ownPorts].filter((p): p is number => typeof p === 'number' && p > 0),
    allowHosts: options.callbackHosts
  })
  const contracts = new ScService({
    ...assetServiceDeps(c, () => network, 'sc-follows', log),
    files: new ScFileStore(c.base.layout.contracts),
    engine,
    callbacks,
    port: options.apiPort
  })
  c.consensus.contracts.code = async (scId) => await contracts.code(scId)
  c.consensus.contracts.engine = engine
  c.consensus.onNftCommitted(async (scId, blockId, owner, txid) => {
    if (!await contracts.knows(scId)) return false
    contracts.committed(scId, blockId, txid, owner)
    return true
  })
  return {
    contracts,
    api: { contracts },
    rpcMethods: () => scRpcHandlers(() => contracts),
    startNetwork: async ({ host, rpc }) => {
      network = createScNetwork(host, rpc)
      await contracts.resume().catch((e) => { log.warn(`smart-contract subscriptions: ${errorMessage(e)}`) })
    },
    stop: async () => { await callbacks.drain() }
  }
}
