import { lstatSync, openSync, readSync, closeSync } from 'node:fs'
import { basename, dirname, isAbsolute, join, resolve } from 'node:path'
import type { ExplorerConfigView, ExplorerStatus } from '../../api/contract/routes.js'
import type { NodeConfigStore } from '../../storage/node-config-store.js'
import type { LedgerChange } from '../../storage/token-ledger.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { DIALECT_NAMES, EXPLORER_SERVICE, defaultPort, parseDbType, type Dialect } from './db-types.js'
import type { DbTarget } from './drivers.js'
import type { ExplorerSource } from './explorer-source.js'
import type { ExplorerSync, ExplorerSyncOptions } from './explorer-sync.js'
import type { ServiceSetupInput } from '../../api/server/services.js'
export type { ServiceSetupInput } from '../../api/server/services.js'

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
  /** The node's data directory; SQLite database files are plain names inside it. */
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
  /** changes committed while the export's module loads (it is loaded once a database is configured) */
  private loading?: { changes: LedgerChange[] }
  private readonly unsubscribe: () => void

  constructor (private readonly deps: ExplorerServiceDeps) {
    this.unsubscribe = deps.ledger.onCommit((c) => {
      if (this.sync !== undefined) this.sync.noteChange(c)
      else this.loading?.changes.push(c)
    })
  }

  private stored (): StoredExplorerConfig | undefined {
    const s = this.deps.config.data.settings.services as Record<string, StoredExplorerConfig> | undefined
    return s?.[EXPLORER_SERVICE]
  }

  /** Starts syncing when a configuration was saved before; never fails the node's start. */
  open (): void {
    const cfg = this.stored()
    if (cfg === undefined) return
    this.run(cfg).catch((e: unknown) => {
      this.deps.log.error(`explorer: saved configuration cannot be used (${errorMessage(e)}); run setupservice again`)
    })
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
    const name = input.db_name ?? DEFAULTS.db_name
    if (name.trim() === '') throw new RbtError(ErrorCode.INVALID_INPUT, 'database name must not be empty')
    if (dialect === 'sqlite') checkSqliteFile(this.deps.root, name)
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
    await this.run(cfg)
    return this.view(cfg)
  }

  config (): ExplorerConfigView | null {
    const cfg = this.stored()
    return cfg === undefined ? null : this.view(cfg)
  }

  status (): ExplorerStatus { return this.sync?.status() ?? NOT_CONFIGURED }

  async stop (): Promise<void> {
    this.unsubscribe()
    this.loading = undefined
    await this.sync?.stop()
  }

  private view (cfg: StoredExplorerConfig): ExplorerConfigView {
    return {
      service_name: EXPLORER_SERVICE,
      db_type: DIALECT_NAMES[cfg.dialect],
      db_address: cfg.dialect === 'sqlite' ? null : cfg.address,
      db_port: cfg.port ?? null,
      db_name: cfg.dialect === 'sqlite' ? this.sqliteFile(cfg.name) : cfg.name,
      db_username: cfg.dialect === 'sqlite' ? null : cfg.username,
      password_set: cfg.passwordSealed !== undefined
    }
  }

  /**
   * The database file of a SQLite configuration. Saved configurations from before the plain-name
   * rule hold an absolute path: it is used only when it names a plain file directly inside the
   * data directory.
   */
  private sqliteFile (name: string): string {
    const root = resolve(this.deps.root)
    const plain = isAbsolute(name) && dirname(resolve(name)) === root ? basename(name) : name
    checkSqliteName(plain)
    return join(root, plain)
  }

  private async run (cfg: StoredExplorerConfig): Promise<void> {
    const target: DbTarget = {
      dialect: cfg.dialect,
      address: cfg.address,
      ...(cfg.port !== undefined ? { port: cfg.port } : {}),
      name: cfg.dialect === 'sqlite' ? this.sqliteFile(cfg.name) : cfg.name,
      username: cfg.username,
      password: cfg.passwordSealed !== undefined ? this.deps.sealer.unsealText(SEAL_LABEL, cfg.passwordSealed) : ''
    }
    const loading: { changes: LedgerChange[] } = { changes: [] }
    this.loading = loading
    const { ExplorerSync } = await import('./explorer-sync.js')
    // stopped, or configured again, while the module loaded
    if (this.loading !== loading) return
    this.loading = undefined
    this.sync = new ExplorerSync({ source: this.deps.source, target, log: this.deps.log, ...this.deps.sync })
    for (const c of loading.changes) this.sync.noteChange(c)
    this.sync.start()
    this.deps.log.info(`explorer: syncing to ${DIALECT_NAMES[cfg.dialect]} ${cfg.dialect === 'sqlite' ? target.name : `${cfg.address}:${cfg.port ?? ''}/${cfg.name}`}`)
  }
}

/**
 * A SQLite database is a plain file name inside the data directory: letters, digits, `-`, `_` and
 * `.` (so an optional `.db` / `.sqlite` suffix), at most 128 characters, no leading dot, no `..`,
 * no separators. Names the node itself uses in its data directory are refused, whatever the case.
 */
const SQLITE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/
const NODE_OWN_NAMES = new Set(['node.json', 'db', 'peer.key', 'dids', 'nft', 'contracts', 'temp', 'quorum.secret', 'pledgedtokens.json', 'pledgedtokens.json.tmp', 'explorer.down', 'api_config.json', 'rubix'])
const SQLITE_HEADER = 'SQLite format 3\0'

function sqliteNameError (name: string, why: string): RbtError {
  return new RbtError(ErrorCode.INVALID_INPUT, `SQLite database name ${JSON.stringify(name.slice(0, 200))} ${why}: give a plain file name such as explorer.sqlite (letters, digits, "-", "_", "."; no folders), kept in the node's data directory`)
}

export function checkSqliteName (name: string): void {
  if (!SQLITE_NAME.test(name) || name.includes('..')) throw sqliteNameError(name, 'is not a plain file name')
  const lower = name.toLowerCase()
  if (NODE_OWN_NAMES.has(lower) || lower.endsWith('-wal') || lower.endsWith('-shm') || lower.endsWith('-journal')) throw sqliteNameError(name, 'is a name the node uses itself')
}

/** Checks the name, and that a file already there is a SQLite database (never adds tables to anything else). */
function checkSqliteFile (root: string, name: string): void {
  checkSqliteName(name)
  const file = join(root, name)
  let st
  try { st = lstatSync(file) } catch { return }
  if (!st.isFile()) throw sqliteNameError(name, 'names something in the data directory that is not a regular file')
  if (st.size === 0) return
  const head = Buffer.alloc(SQLITE_HEADER.length)
  const fd = openSync(file, 'r')
  try { readSync(fd, head, 0, head.length, 0) } finally { closeSync(fd) }
  if (head.toString('latin1') !== SQLITE_HEADER) throw sqliteNameError(name, 'names an existing file that is not a SQLite database')
}
