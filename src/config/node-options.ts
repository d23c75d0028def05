import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { ErrorCode, RbtError } from '../util/errors.js'
import { parseLogFormat, type LogFormat } from '../util/logger.js'
import { DEFAULT_CONFIG_FILE, DEFAULT_CONFIG_KEY, decryptApiConfig, defaultApiConfig, encryptApiConfig, type ApiConfig } from './api-config.js'
import { removeLeftoversSync, writeFileDurableSync } from '../util/durable-write.js'
import { parseByteSize } from '../util/byte-size.js'

/** Everything `rbtnode run` needs, resolved once from flags, the config file and defaults. */
export interface NodeOptions {
  nodeIndex: number
  workDir: string
  /** per-network data directory inside workDir */
  dataDir: string
  configPath: string
  apiHost: string
  apiPort: number
  swarmHost: string
  swarmPort: number
  testNet: boolean
  /** resolved swarm key file, or undefined for the key shipped in the package */
  swarmKeyPath?: string
  grpcPort?: number
  startCore: boolean
  bootstrap: string[]
  legacyPort?: number
  /** proof-of-work level of the release-2.6 unpledge (RBTNODE_POW_LEVEL overrides; default 6) */
  legacyPowLevel: number
  fullnode: boolean
  faucet: boolean
  fullnodes: string[]
  /**
   * LAN discovery by mDNS: `-mdns`, else RBTNODE_MDNS=0|1, else the config file's `rbtnode.mdns`,
   * else on (the reference's IPFS daemon finds LAN peers the same way)
   */
  mdns: boolean
  /** milliseconds between mDNS queries (RBTNODE_MDNS_INTERVAL_MS; default 10 000) */
  mdnsIntervalMs: number
  /**
   * The reference network's Kubo wire beside rbtnode's own (its two DHTs, the `peer_service`
   * topic): `-kubo`, else RBTNODE_KUBO=0|1, else the config file's `rbtnode.kubo`, else off
   * (docs/interop.md, decisions/0024)
   */
  kubo: boolean
  /** receiver: only signers of this node's own quorum list count (`-trustOwnQuorumList`, config) */
  trustOwnQuorumList: boolean
  /**
   * count only arbiter seats: while no committee is in force, claim, sign and accept no transfer
   * (`-requireCommittee`, else RBTNODE_REQUIRE_COMMITTEE=0|1, else config `rbtnode.require_committee`; off by default: docs/security.md, "Before the committee")
   */
  requireCommittee: boolean
  /** the API needs a bearer token, written to <workDir>/api.cookie at each start (`-apiAuth`, config) */
  apiAuth: boolean
  /** Host names served besides localhost, 127.0.0.1 and [::1] (`-allowHosts`, config) */
  allowHosts: string[]
  /** browser origins allowed to call the API (`-corsOrigins`, config); none by default */
  corsOrigins: string[]
  /** largest JSON body on every HTTP port, bytes */
  maxJsonBytes: number
  /**
   * The only hosts smart-contract callbacks may name (config `rbtnode.callback_hosts`: host names
   * or IP addresses); empty: any host the callback address rules allow (src/node/smart-contracts/callback-address.ts)
   */
  callbackHosts: string[]
  /** log line format: `-logFormat`, else the config file's `rbtnode.log_format`, else text */
  logFormat: LogFormat
  /** largest NFT artifact accepted, bytes: `-nftArtifactLimit`, else `rbtnode.nft_artifact_limit`, else 4 GiB */
  nftArtifactLimit: number
  config: ApiConfig
  /** what resolving found and fixed on the way (e.g. an empty config file written again), for the log */
  notices?: string[]
}

export interface RunFlags {
  c?: string
  k?: string
  n?: number
  p?: string
  s?: boolean
  testNet?: boolean
  testNetKey?: string
  grpcPort?: number
  port?: number
  host?: string
  swarmPort?: number
  swarmHost?: string
  legacyPort?: number
  fullnode?: boolean
  faucet?: boolean
  mdns?: boolean
  kubo?: boolean
  trustOwnQuorumList?: boolean
  requireCommittee?: boolean
  apiAuth?: boolean
  /** comma-separated */
  allowHosts?: string
  /** comma-separated */
  corsOrigins?: string
  /** text or json */
  logFormat?: string
  /** bytes, or with a unit (500MiB, 4GiB) */
  nftArtifactLimit?: string
}

/**
 * Resolves flags + config file (created encrypted on first start) + defaults into NodeOptions.
 * `cwd` is where relative paths given on the command line are resolved, as the reference does for
 * its swarm key files.
 */
export function resolveNodeOptions (flags: RunFlags, cwd: string = process.cwd()): NodeOptions {
  const n = flags.n ?? 0
  if (!Number.isInteger(n) || n < 0 || n > 9999) throw new RbtError(ErrorCode.CONFIG, `-n must be an unsigned integer below 10000, got ${String(flags.n)}`)
  const workDir = resolve(cwd, flags.p ?? './')
  mkdirSync(workDir, { recursive: true })
  const configFile = flags.c ?? DEFAULT_CONFIG_FILE
  const configPath = isAbsolute(configFile) ? configFile : join(workDir, configFile)
  const key = flags.k ?? DEFAULT_CONFIG_KEY

  let config: ApiConfig
  const notices: string[] = []
  removeLeftoversSync(configPath)
  const text = existsSync(configPath) ? readFileSync(configPath, 'utf8') : undefined
  if (text !== undefined && text.trim() !== '') {
    try {
      config = decryptApiConfig(text, key)
    } catch (e) {
      throw new RbtError(ErrorCode.CONFIG, `${configPath}: ${(e as Error).message}; if the file is damaged, restore it from a backup or move it away (a new one with the defaults is written at the next start)`, { cause: e })
    }
  } else {
    // an empty file is the first start's write cut short by a crash (it is written once, with the
    // defaults): writing it again loses nothing
    if (text !== undefined) notices.push(`${configPath} was empty (its first write was cut short): written again with the defaults`)
    config = defaultApiConfig(n, workDir)
    writeFileDurableSync(configPath, encryptApiConfig(config, key), { mode: 0o600 })
  }

  const testNet = flags.testNet ?? false
  let swarmKeyPath: string | undefined
  const keyName = testNet ? (flags.testNetKey ?? 'testswarm.key') : 'swarm.key'
  const candidate = resolve(cwd, keyName)
  if (existsSync(candidate)) swarmKeyPath = candidate
  else if (testNet && flags.testNetKey !== undefined && flags.testNetKey !== 'testswarm.key') {
    throw new RbtError(ErrorCode.CONFIG, `swarm key file ${candidate} named by -testNetKey does not exist`)
  }

  const ours = config.cfg_data.rbtnode ?? {}
  const dataDir = join(workDir, 'Rubix', testNet ? 'TestNet' : 'MainNet')
  mkdirSync(dataDir, { recursive: true })
  const legacyPort = flags.legacyPort ?? ours.legacy_port
  return {
    nodeIndex: n,
    workDir,
    dataDir,
    configPath,
    apiHost: flags.host ?? config.node_address ?? '127.0.0.1',
    apiPort: checkPort(flags.port ?? config.node_port ?? 20000 + n, 'API port', true),
    swarmHost: flags.swarmHost ?? ours.swarm_host ?? '127.0.0.1',
    swarmPort: checkPort(flags.swarmPort ?? config.cfg_data.ports.swarm_port ?? 4002 + n, 'swarm port', true),
    testNet,
    swarmKeyPath,
    grpcPort: flags.grpcPort,
    startCore: flags.s ?? true,
    bootstrap: testNet ? (config.cfg_data.test_bootstrap ?? []) : (config.cfg_data.bootstrap ?? []),
    legacyPort: legacyPort !== undefined && legacyPort > 0 ? checkPort(legacyPort, 'legacy port') : undefined,
    legacyPowLevel: powLevel(process.env.RBTNODE_POW_LEVEL !== undefined ? Number(process.env.RBTNODE_POW_LEVEL) : ours.legacy_pow_level ?? 6),
    fullnode: flags.fullnode ?? ours.fullnode ?? false,
    faucet: flags.faucet ?? ours.faucet ?? false,
    fullnodes: ours.fullnodes ?? [],
    mdns: flags.mdns ?? envSwitch('RBTNODE_MDNS') ?? ours.mdns ?? true,
    mdnsIntervalMs: mdnsInterval(process.env.RBTNODE_MDNS_INTERVAL_MS),
    kubo: flags.kubo ?? envSwitch('RBTNODE_KUBO') ?? ours.kubo ?? false,
    trustOwnQuorumList: flags.trustOwnQuorumList ?? ours.trust_own_quorum_list ?? false,
    requireCommittee: flags.requireCommittee ?? envSwitch('RBTNODE_REQUIRE_COMMITTEE') ?? ours.require_committee ?? false,
    apiAuth: flags.apiAuth ?? ours.api_auth ?? false,
    allowHosts: flags.allowHosts !== undefined ? splitList(flags.allowHosts) : ours.allow_hosts ?? [],
    corsOrigins: flags.corsOrigins !== undefined ? splitList(flags.corsOrigins) : ours.cors_origins ?? [],
    maxJsonBytes: maxJson(ours.max_json_bytes),
    callbackHosts: hostList(ours.callback_hosts, 'rbtnode.callback_hosts'),
    logFormat: logFormat(flags.logFormat, ours.log_format),
    nftArtifactLimit: artifactLimit(flags.nftArtifactLimit, ours.nft_artifact_limit),
    config,
    notices
  }
}

function logFormat (flag: string | undefined, config: unknown): LogFormat {
  try {
    return parseLogFormat(flag) ?? parseLogFormat(typeof config === 'string' ? config : config === undefined || config === null ? undefined : String(config), 'rbtnode.log_format') ?? 'text'
  } catch (e) {
    throw new RbtError(ErrorCode.CONFIG, (e as Error).message)
  }
}

/** 4 GiB unless set; from 1 KiB to 1 TiB. */
function artifactLimit (flag: string | undefined, config: number | string | undefined): number {
  const [v, name] = flag !== undefined ? [flag, '-nftArtifactLimit'] : [config, 'rbtnode.nft_artifact_limit']
  if (v === undefined || v === '') return 4 * 1024 ** 3
  const n = parseByteSize(v)
  if (n === undefined || n < 1024 || n > 1024 ** 4) throw new RbtError(ErrorCode.CONFIG, `${name} must be a size from 1KiB to 1TiB (bytes, or with a unit: 500MiB, 4GiB, 2GB), got ${JSON.stringify(v)}`)
  return n
}

function splitList (v: string): string[] {
  return v.split(',').map((x) => x.trim()).filter((x) => x !== '')
}

function hostList (v: unknown, name: string): string[] {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v) || !v.every((h) => typeof h === 'string' && h.trim() !== '' && !/[\s/@]/.test(h.trim()))) {
    throw new RbtError(ErrorCode.CONFIG, `${name} must be a list of host names or IP addresses`)
  }
  return v.map((h: string) => h.trim().toLowerCase())
}

function maxJson (v: number | undefined): number {
  if (v === undefined) return 1024 * 1024
  if (!Number.isInteger(v) || v < 1024 || v > 64 * 1024 * 1024) throw new RbtError(ErrorCode.CONFIG, `rbtnode.max_json_bytes must be an integer from 1024 to 67108864, got ${String(v)}`)
  return v
}

/** Whether an API bind address is a loopback one (only local processes reach it). */
export function isLoopbackHost (host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '')
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h)
}

/** An on/off environment setting: 1/true/on or 0/false/off; undefined when unset or empty. */
function envSwitch (name: string): boolean | undefined {
  const v = (process.env[name] ?? '').trim().toLowerCase()
  if (v === '') return undefined
  if (v === '1' || v === 'true' || v === 'on') return true
  if (v === '0' || v === 'false' || v === 'off') return false
  throw new RbtError(ErrorCode.CONFIG, `${name} must be 0 or 1, got "${process.env[name] ?? ''}"`)
}

function mdnsInterval (v: string | undefined): number {
  if (v === undefined || v.trim() === '') return 10_000
  const ms = Number(v)
  if (!Number.isInteger(ms) || ms < 100 || ms > 3_600_000) throw new RbtError(ErrorCode.CONFIG, `RBTNODE_MDNS_INTERVAL_MS must be an integer from 100 to 3600000, got "${v}"`)
  return ms
}

function powLevel (n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 16) throw new RbtError(ErrorCode.CONFIG, `the proof-of-work level must be an integer from 1 to 16, got ${String(n)}`)
  return n
}

function checkPort (p: number, what: string, allowZero = false): number {
  if (!Number.isInteger(p) || p < (allowZero ? 0 : 1) || p > 65535) throw new RbtError(ErrorCode.CONFIG, `${what} must be an integer in 1..65535, got ${String(p)}`)
  return p
}
