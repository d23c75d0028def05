import { isAbsolute, resolve } from 'node:path'
import type { ExplorerConfigView, ExplorerStatus } from '../../api/contract/routes.js'
import type { NodeConfigStore } from '../../storage/node-config-store.js'
import type { LedgerChange } from '../../storage/token-ledger.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { DIALECT_NAMES, EXPLORER_SERVICE, defaultPort, parseDbType, type Dialect } from './db-types.js'
import type { DbTarget } from './drivers.js'
import { ExplorerSync, type ExplorerSource, type ExplorerSyncOptions } from './explorer-sync.js'

/** What `setupservice` sends (SPEC defaults apply to what is absent). */
export interface ServiceSetupInput {
  service_name?: string
  db_type?: string
  db_address?: string
  db_port?: number | string
  db_name?: string
  db_username?: string
  db_password?: string
}

/** The explorer configuration as kept in node.json: the password only sealed with the node secret. */
interface StoredExplorerConfig {
  dialect: Dialect
  address: string
  port?: number
  name: string
  username: string
  passwordSealed?: string
  updatedAt: number
}

export interface Sealer {
  sealText: (label: string, text: string) => string
  unsealText: (label: string, sealed: string) => string
}

export interface ExplorerServiceDeps {
  config: NodeConfigStore
  sealer: Sealer
  /** The node's data directory; relative SQLite paths are resolved against it. */
  root: string
  source: ExplorerSource
  ledger: { onCommit: (fn: (c: LedgerChange) => void) => () => void }
  log: Logger
  /** Passed on to ExplorerSync (test seams, backoff). */
  sync?: Partial<Pick<ExplorerSyncOptions, 'connect' | 'faultFile' | 'backoff' | 'pollMs'>>
}

const SEAL_LABEL = 'explorer_service/db_password'
const DEFAULTS = { db_type: 'SQLServer', db_address: 'localhost', db_name: 'ExplorerDB', db_username: 'sa' }

const NOT_CONFIGURED: ExplorerStatus = {
  configured: false, service: EXPLORER_SERVICE, db_type: null, database: null, state: 'not_configured', pending: 0,
  last_error: null, last_sync_at: null, last_full_sync_at: null, retries: 0, next_retry_at: null,
  rows: { dids: 0, tokens: 0, transactions: 0, blocks: 0, nfts: 0, fts: 0, contracts: 0 }
}

/**
 * The explorer service of a node: its configuration (set by `setupservice`, persisted, password
 * sealed at rest and never echoed) and the sync loop that keeps the configured database in step.
 */
export class ExplorerService {
  private sync?: ExplorerSync
  private readonly unsubscribe: () => void

  constructor (private readonly deps: ExplorerServiceDeps) {
    this.unsubscribe = deps.ledger.onCommit((c) => { this.sync?.noteChange(c) })
  }

  private stored (): StoredExplorerConfig | undefined {
    const s = this.deps.config.data.settings.services as Record<string, StoredExplorerConfig> | undefined
    return s?.[EXPLORER_SERVICE]
  }

  /** Starts syncing when a configuration was saved before; never fails the node's start. */
  open (): void {
    const cfg = this.stored()
    if (cfg === undefined) return
    try {
      this.run(cfg)
    } catch (e) {
      this.deps.log.error(`explorer: saved configuration cannot be used (${errorMessage(e)}); run setupservice again`)
    }
  }

  async setup (input: ServiceSetupInput): Promise<ExplorerConfigView> {
    const service = input.service_name ?? EXPLORER_SERVICE
    if (service !== EXPLORER_SERVICE) throw new RbtError(ErrorCode.INVALID_INPUT, `unknown service "${service}": the supported service is ${EXPLORER_SERVICE}`)
    const dialect = parseDbType(input.db_type ?? DEFAULTS.db_type)
    let port: number | undefined
    if (input.db_port !== undefined && input.db_port !== '') {
      port = Number(input.db_port)
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RbtError(ErrorCode.INVALID_INPUT, `database port must be a number from 1 to 65535, got "${input.db_port}"`)
    }
    let name = input.db_name ?? DEFAULTS.db_name
    if (name.trim() === '') throw new RbtError(ErrorCode.INVALID_INPUT, 'database name must not be empty')
    if (dialect === 'sqlite') name = isAbsolute(name) ? name : resolve(this.deps.root, name)
    const address = input.db_address ?? DEFAULTS.db_address
    if (dialect !== 'sqlite' && address.trim() === '') throw new RbtError(ErrorCode.INVALID_INPUT, 'database address must not be empty')
    const cfg: StoredExplorerConfig = {
      dialect,
      address,
      ...(dialect === 'sqlite' ? {} : { port: port ?? defaultPort(dialect) }),
      name,
      username: input.db_username ?? DEFAULTS.db_username,
      ...(input.db_password !== undefined && input.db_password !== '' ? { passwordSealed: this.deps.sealer.sealText(SEAL_LABEL, input.db_password) } : {}),
      updatedAt: Date.now()
    }
    await this.deps.config.update((d) => {
      const services = (d.settings.services ?? {}) as Record<string, unknown>
      services[EXPLORER_SERVICE] = cfg
      d.settings.services = services
    })
    await this.sync?.stop()
    this.sync = undefined
    this.run(cfg)
    return this.view(cfg)
  }

  config (): ExplorerConfigView | null {
    const cfg = this.stored()
    return cfg === undefined ? null : this.view(cfg)
  }

  status (): ExplorerStatus { return this.sync?.status() ?? NOT_CONFIGURED }

  async stop (): Promise<void> {
    this.unsubscribe()
    await this.sync?.stop()
  }

  private view (cfg: StoredExplorerConfig): ExplorerConfigView {
    return {
      service_name: EXPLORER_SERVICE,
      db_type: DIALECT_NAMES[cfg.dialect],
      db_address: cfg.dialect === 'sqlite' ? null : cfg.address,
      db_port: cfg.port ?? null,
      db_name: cfg.name,
      db_username: cfg.dialect === 'sqlite' ? null : cfg.username,
      password_set: cfg.passwordSealed !== undefined
    }
  }

  private run (cfg: StoredExplorerConfig): void {
    const target: DbTarget = {
      dialect: cfg.dialect,
      address: cfg.address,
      ...(cfg.port !== undefined ? { port: cfg.port } : {}),
      name: cfg.name,
      username: cfg.username,
      password: cfg.passwordSealed !== undefined ? this.deps.sealer.unsealText(SEAL_LABEL, cfg.passwordSealed) : ''
    }
    this.sync = new ExplorerSync({ source: this.deps.source, target, log: this.deps.log, ...this.deps.sync })
    this.sync.start()
    this.deps.log.info(`explorer: syncing to ${DIALECT_NAMES[cfg.dialect]} ${cfg.dialect === 'sqlite' ? cfg.name : `${cfg.address}:${cfg.port ?? ''}/${cfg.name}`}`)
  }
}
