import '../util/polyfill.js'
import type { NodeOptions } from '../config/node-options.js'
import { createLogger, type Logger } from '../util/logger.js'
import { ComponentSet, type ComponentList } from './component/component.js'
import { dataDirLayout } from './component/data-dir.js'
import { metricsComponent } from './metrics/metrics-component.js'
import { storageComponent } from './storage/storage-component.js'
import { signingComponent } from './signing/signing-component.js'
import { identityComponent } from './identity/identity-component.js'
import { tokensComponent } from './tokens/tokens-component.js'
import { consensusComponent } from './consensus/consensus-component.js'
import { nftComponent } from './nft/nft-component.js'
import { smartContractsComponent } from './smart-contracts/smart-contracts-component.js'
import { syncComponent } from './sync/sync-component.js'
import { explorerComponent } from './explorer/explorer-component.js'
import { discoveryComponent } from './discovery/discovery-component.js'
import { kuboBlocksComponent } from './kubo-blocks/kubo-blocks-component.js'
import { coreComponent, p2pComponent } from './p2p/p2p-component.js'
import { apiGuardComponent } from './api-guard/api-guard-component.js'
import { httpComponent } from './http/http-component.js'
import { legacy26Component } from './legacy26/legacy26-component.js'

/**
 * The node's components, in start order; each is built from the ones listed before it and
 * stopped in reverse. Adding or removing a feature is one line here.
 */
export const COMPONENTS: ComponentList = [
  ['metrics', metricsComponent],
  ['storage', storageComponent],
  ['signing', signingComponent],
  ['identity', identityComponent],
  ['tokens', tokensComponent],
  ['consensus', consensusComponent],
  ['nft', nftComponent],
  ['smartContracts', smartContractsComponent],
  ['sync', syncComponent],
  ['explorer', explorerComponent],
  ['kuboBlocks', kuboBlocksComponent],
  ['discovery', discoveryComponent],
  ['p2p', p2pComponent],
  ['apiGuard', apiGuardComponent],
  ['http', httpComponent],
  ['legacy26', legacy26Component],
  ['core', coreComponent]
]

export interface RbtNodeInit {
  options: NodeOptions
  logger?: Logger
}

/** The composition root: builds the components, starts them in order and stops them in reverse. */
export class RbtNode {
  readonly log: Logger
  private readonly components: ComponentSet
  private closing?: Promise<void>
  private resolveClosed!: () => void
  /** Resolves once the node has fully stopped (after close or a shutdown request). */
  readonly closed = new Promise<void>((resolve) => { this.resolveClosed = resolve })

  private constructor (readonly options: NodeOptions, log: Logger, list: ComponentList) {
    this.log = log
    this.components = new ComponentSet(list, {
      options,
      layout: dataDirLayout(options.dataDir),
      logger: log,
      ownPorts: new Set(),
      shutdown: () => { this.close().catch((e) => { log.error(`shutdown: ${String(e)}`) }) }
    })
  }

  /** Builds and starts a node; on a failure what started is stopped again and the error thrown. */
  static async init ({ options, logger }: RbtNodeInit, list: ComponentList = COMPONENTS): Promise<RbtNode> {
    const node = new RbtNode(options, logger ?? createLogger(), list)
    try {
      await node.components.start()
    } catch (e) {
      await node.close().catch(() => {})
      throw e
    }
    return node
  }

  /** Graceful stop: components in reverse order (the API first: no new work; storage last). */
  async close (): Promise<void> {
    this.closing ??= (async () => {
      this.log.info('shutting down')
      await this.components.stop(this.log)
      this.log.info('stopped')
      this.resolveClosed()
    })()
    await this.closing
  }
}
