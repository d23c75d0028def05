import { join } from 'node:path'
import { ErrorCode, RbtError } from '../../util/errors.js'
import type { Component, Factory } from '../component/component.js'
import type { ConsensusComponent } from '../consensus/consensus-component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { MetricsComponent } from '../metrics/metrics-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import { ExplorerService } from './explorer-service.js'
import { kvExplorerSource } from './explorer-source.js'

/** The explorer service (setupservice): exports chain data to a relational database (docs/explorer.md). */
export interface ExplorerComponent extends Component {
  explorer: ExplorerService
}

type Needs = { storage: StorageComponent, identity: IdentityComponent, consensus: ConsensusComponent, metrics: MetricsComponent }

export const explorerComponent: Factory<Needs, ExplorerComponent> = ({ base, storage, identity: { identity }, consensus, metrics }) => {
  const testHooks = process.env.RBTNODE_TEST_HOOKS === '1'
  const explorer = new ExplorerService({
    config: storage.config,
    sealer: consensus.registry,
    root: base.layout.root,
    source: kvExplorerSource(storage.store, async () => await Promise.all((await identity.list()).map(async (did) => {
      const r = await identity.record(did)
      return { did, type: r?.type, createdAt: r?.createdAt }
    }))),
    ledger: storage.tokenLedger,
    log: base.log,
    sync: {
      ...(testHooks ? { faultFile: join(base.layout.root, 'explorer.down') } : {}),
      backoff: { initialMs: 500, maxMs: Number(process.env.RBTNODE_EXPLORER_MAX_BACKOFF_MS ?? 30_000) }
    }
  })
  metrics.metrics.setSources({ explorer: () => explorer.status() })
  return {
    explorer,
    api: {
      services: {
        setup: async (input) => await explorer.setup(input),
        get: (name) => {
          if (name !== 'explorer_service') throw new RbtError(ErrorCode.NOT_FOUND, `unknown service "${name}": the supported service is explorer_service`)
          return { config: explorer.config(), status: explorer.status() }
        }
      }
    },
    start: () => { explorer.open() },
    stop: async () => { await explorer.stop() }
  }
}
