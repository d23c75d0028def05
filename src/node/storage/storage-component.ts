import { mkdirSync } from 'node:fs'
import { LevelStore } from '../../storage/level-store.js'
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
  const store = new LevelStore(layout.database)
  const config = new NodeConfigStore(layout.nodeConfig)
  const tokenLedger = new TokenLedger(store, sha3Hex)
  tokenLedger.observeCommit(metrics.metrics.ledgerCommit)
  const balances = store.collection<BalanceRecord>(Collections.balances)
  metrics.metrics.setSources({ balances: async function * () { for await (const [, b] of balances.entries()) yield b } })
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
