import { mkdirSync } from 'node:fs'
import { LevelStore, type StoreEvent } from '../../storage/level-store.js'
import { ErrorCode } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { NodeConfigStore } from '../../storage/node-config-store.js'
import { TokenLedger } from '../../storage/token-ledger.js'
import { levelTokenRepositories, type TokenRepositories } from '../../storage/token-repositories.js'
import { Collections, type BalanceRecord } from '../../storage/token-records.js'
import { sha3Hex } from '../../tokenchain/hash.js'
import type { Component, Factory } from '../component/component.js'
import type { MetricsComponent } from '../metrics/metrics-component.js'

/** The data directory's database and node.json, and the token ledger over the database. */
export interface StorageComponent extends Component {
  store: LevelStore
  config: NodeConfigStore
  tokenLedger: TokenLedger
  repos: TokenRepositories
}

export const storageComponent: Factory<{ metrics: MetricsComponent }, StorageComponent> = ({ base, metrics }) => {
  const { layout, options, log } = base
  for (const d of [layout.root, layout.dids, layout.temp]) mkdirSync(d, { recursive: true })
  const store = new LevelStore(layout.database, { onEvent: (e) => { logStoreEvent(log, e) } })
  const config = new NodeConfigStore(layout.nodeConfig)
  const tokenLedger = new TokenLedger(store, sha3Hex)
  tokenLedger.observeCommit(metrics.metrics.ledgerCommit)
  const balances = store.collection<BalanceRecord>(Collections.balances)
  metrics.metrics.setSources({
    balances: async function * () { for await (const [, b] of balances.entries()) yield b },
    writtenBytes: () => store.writtenBytes,
    storageFault: () => store.writeFault === undefined ? undefined : store.writeFault.code === ErrorCode.INSUFFICIENT_STORAGE ? 'full' : 'unavailable'
  })
  return {
    store,
    config,
    tokenLedger,
    repos: levelTokenRepositories(store),
    start: async () => {
      await store.open()
      // a data dir from before the free-FT index gets it filled once
      const indexed = await tokenLedger.indexFreeFts()
      if (indexed > 0) log.info(`indexed ${indexed} free FT(s) kept from before the free-FT index`)
      await config.open(options.bootstrap)
    },
    stop: async () => { await store.close() }
  }
}

/** A storage fault and its way back, in the log (the operator's view of what writes answer meanwhile). */
function logStoreEvent (log: Logger, e: StoreEvent): void {
  switch (e.kind) {
    case 'fault':
      log.error(`storage: a write failed (${e.detail}); writes are refused with ${e.code} until the store has been reopened and checked, reads go on`)
      break
    case 'probe-failed':
      // every attempt while the backoff is short, then every tenth
      if (e.attempt <= 3 || e.attempt % 10 === 0) log.warn(`storage: writes cannot succeed yet (attempt ${e.attempt}: ${e.detail}); retrying`)
      break
    case 'reopen-failed':
      log.error(`storage: reopening the store failed (${e.detail}); retrying`)
      break
    case 'recovered-with-loss':
      log.error(`storage: the database's log was damaged and LevelDB dropped part of it while opening (${e.notes.join('; ')}); ` +
        'records written last before the damage may be gone from this node: sync the DIDs hosted here from a fullnode (rbtnode syncwallet -did <DID>; docs/operations.md, "A damaged store")')
      break
    case 'reopened':
      log.info(`storage: the store was reopened; ${e.checked} acknowledged record(s) checked, ${e.rewritten} written again; writes are taken again`)
  }
}
