import type { LedgerChange } from '../../storage/token-ledger.js'
import { errorMessage } from '../../util/errors.js'
import type { Component, Factory } from '../component/component.js'
import { AnnouncementBatcher } from '../consensus/announcement-batcher.js'
import type { ConsensusComponent } from '../consensus/consensus-component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { SigningComponent } from '../signing/signing-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import { createSyncApi } from './sync-api.js'
import { createdTokens, FN_PLEDGES, SyncService, type SyncNetwork } from './sync-service.js'

/** Chain sync: serving chains, the fullnode role, wallet recovery (docs/architecture.md, "Recovery and chain sync"). */
export interface SyncComponent extends Component {
  sync: SyncService
}

type Needs = { storage: StorageComponent, identity: IdentityComponent, signing: SigningComponent, consensus: ConsensusComponent }

export const syncComponent: Factory<Needs, SyncComponent> = ({ base, storage, identity: idc, signing, consensus }) => {
  const { options, log } = base
  const identity = idc.identity
  let network: SyncNetwork | undefined
  let fullnodeTimer: NodeJS.Timeout | undefined
  let genesisBatcher: AnnouncementBatcher | undefined
  let unsubscribe: (() => void) | undefined
  const sync = new SyncService({
    ledger: storage.tokenLedger,
    repos: storage.repos,
    verifier: idc.verifier(),
    fullnode: options.fullnode,
    isLocalDid: async (did) => await identity.isLocal(did),
    network: () => network,
    pledges: storage.store.collection(FN_PLEDGES),
    pledgePeriodMs: process.env.RBTNODE_PLEDGE_PERIOD_MS !== undefined ? Number(process.env.RBTNODE_PLEDGE_PERIOD_MS) : undefined,
    log,
    doubleSpends: { flag: async (p) => { await consensus.current()?.doubleSpends.flag(p) } }
  })
  // fullnodes archive the tokens transaction announcements name; quorums fetch spending blocks through chain sync
  consensus.onAnnouncedTokens((from, tokens) => { sync.learn(from, tokens) })
  consensus.chainSourceOf = (peer) => network?.source(peer)
  // a token held here that another transaction spent: its chain is checked (at the announcer, else a fullnode) and it leaves the balance
  consensus.onSpentElsewhere((claims, why, from) => {
    sync.checkSpent(claims, why, from).catch((e) => { log.debug(`checking tokens reported spent (${why}): ${errorMessage(e)}`) })
  })

  /**
   * Tokens that come into being here without a transfer (local and FT mints, part-token splits)
   * are announced on the transaction topic like a committed transfer, so fullnodes keep their
   * chains too and a wallet can recover tokens that never moved. Only tokens of local DIDs at
   * their genesis block are announced, batched: at most 500 ids per message, sent within 2 s.
   */
  const announceGenesis = (change: LedgerChange): void => {
    const fresh = createdTokens(change)
    if (fresh.length === 0) return
    genesisBatcher ??= new AnnouncementBatcher({
      publish: async (tokens) => { await consensus.publishTxn({ spent: [], tokens }) },
      onError: (e) => { log.debug(`announcing new tokens: ${errorMessage(e)}`) }
    })
    const batcher = genesisBatcher
    void (async () => {
      const ids: string[] = []
      for (const r of fresh) if (await identity.isLocal(r.owner)) ids.push(r.tokenId)
      batcher.add(ids)
    })().catch((e) => { log.debug(`announcing new tokens: ${errorMessage(e)}`) })
  }

  return {
    sync,
    api: { sync: createSyncApi(sync, identity, signing.signing) },
    rpcMethods: async () => (await import('./sync-network.js')).syncRpcHandlers(() => sync),
    // tokens minted here are announced on the consensus component's transaction topic
    networkAfter: ['consensus'],
    startNetwork: async ({ host, rpc }) => {
      const syncNet = await import('./sync-network.js')
      const n = syncNet.createSyncNetwork(host, rpc, { testNet: options.testNet, configured: () => options.fullnodes })
      network = n
      if (options.fullnode) {
        const advertise = (): void => { n.advertise().catch((e) => { log.debug(errorMessage(e)) }) }
        setTimeout(advertise, 1500).unref()
        fullnodeTimer = setInterval(advertise, 10 * 60_000)
        fullnodeTimer.unref()
        log.info('fullnode: keeping the chain of every announced transaction, answering wallet sync')
      }
      unsubscribe?.()
      unsubscribe = storage.tokenLedger.onCommit((change) => {
        announceGenesis(change)
        sync.indexPledges(change).catch((e) => { log.debug(`pledge index: ${errorMessage(e)}`) })
      })
    },
    stopNetwork: () => {
      sync.stop()
      unsubscribe?.()
      genesisBatcher?.flush()
      if (fullnodeTimer !== undefined) clearInterval(fullnodeTimer)
    },
    stop: () => { sync.stop() }
  }
}
