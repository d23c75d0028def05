import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { ErrorCode, RbtError } from '../util/errors.js'

/**
 * The encrypted node config file (`-c api_config.json`, key `-k`), in the reference's format so
 * operators can carry their file over: JSON {rand: base64(12-byte nonce), data: base64(AES-256-GCM
 * ciphertext || tag)}, key = SHA-256(nonce || keyString), the nonce doubling as the GCM nonce.
 */
export const DEFAULT_CONFIG_KEY = 'TestKeyBasic#2022'
export const DEFAULT_CONFIG_FILE = 'api_config.json'

export interface ApiConfigPorts {
  sender_port: number
  receiver_port: number
  ipfs_port: number
  swarm_port: number
  ipfs_api_port: number
}

/** Plaintext of the config file; `rbtnode` holds our own settings, ignored by other nodes. */
export interface ApiConfig {
  node_address: string
  node_port: number
  dir_path: string
  cfg_data: {
    ports: ApiConfigPorts
    bootstrap: string[]
    test_bootstrap: string[]
    services?: Record<string, unknown>
    storage_config?: Record<string, unknown>
    test_storage_config?: Record<string, unknown>
    rbtnode?: RbtnodeSettings
  }
}

export interface RbtnodeSettings {
  /** address the libp2p host listens on (default 127.0.0.1) */
  swarm_host?: string
  /** release-2.6 listener port; 0 or absent = off */
  legacy_port?: number
  /** proof-of-work level of the release-2.6 unpledge (hex characters; default 6) */
  legacy_pow_level?: number
  fullnode?: boolean
  faucet?: boolean
  fullnodes?: string[]
  /** LAN discovery by mDNS (default true) */
  mdns?: boolean
  /** the Kubo-compatible wire beside rbtnode's own (default false; docs/interop.md) */
  kubo?: boolean
  /** receiver: accept only signers of this node's own quorum list (default false: by pledge evidence) */
  trust_own_quorum_list?: boolean
  /** count only arbiter seats: no transfer while no committee is in force (docs/security.md, "Before the committee") */
  require_committee?: boolean
  /** require a bearer token on the API (written to <-p>/api.cookie at each start) */
  api_auth?: boolean
  /** Host names the API serves besides the loopback names */
  allow_hosts?: string[]
  /** browser origins allowed to call the API (CORS) */
  cors_origins?: string[]
  /** largest JSON body on every HTTP port, bytes (default 1 MiB) */
  max_json_bytes?: number
  /** when set, the only hosts smart-contract callbacks may name (host names or IP addresses) */
  callback_hosts?: string[]
  /** log line format on stderr: text (default) or json */
  log_format?: string
  /** largest NFT artifact accepted: bytes, or a string with a unit ("500MiB", "4GiB"); default 4 GiB */
  nft_artifact_limit?: number | string
}

function deriveKey (nonce: Buffer, keyString: string): Buffer {
  return createHash('sha256').update(Buffer.concat([nonce, Buffer.from(keyString, 'utf8')])).digest()
}

export function encryptApiConfig (config: ApiConfig, keyString: string): string {
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', deriveKey(nonce, keyString), nonce)
  const ct = Buffer.concat([cipher.update(JSON.stringify(config), 'utf8'), cipher.final(), cipher.getAuthTag()])
  return JSON.stringify({ rand: nonce.toString('base64'), data: ct.toString('base64') })
}

export function decryptApiConfig (fileText: string, keyString: string): ApiConfig {
  let outer: { rand?: unknown, data?: unknown }
  try {
    outer = JSON.parse(fileText)
  } catch {
    throw new RbtError(ErrorCode.CONFIG, 'config file is not valid JSON')
  }
  if (typeof outer.rand !== 'string' || typeof outer.data !== 'string') {
    throw new RbtError(ErrorCode.CONFIG, 'config file is not an encrypted node config (expected {rand, data})')
  }
  const nonce = Buffer.from(outer.rand, 'base64')
  const blob = Buffer.from(outer.data, 'base64')
  if (nonce.length !== 12 || blob.length < 16) throw new RbtError(ErrorCode.CONFIG, 'config file is damaged')
  const decipher = createDecipheriv('aes-256-gcm', deriveKey(nonce, keyString), nonce)
  decipher.setAuthTag(blob.subarray(blob.length - 16))
  let plain: Buffer
  try {
    plain = Buffer.concat([decipher.update(blob.subarray(0, blob.length - 16)), decipher.final()])
  } catch {
    throw new RbtError(ErrorCode.CONFIG, 'cannot decrypt the config file: wrong -k key or damaged file')
  }
  try {
    return JSON.parse(plain.toString('utf8')) as ApiConfig
  } catch {
    throw new RbtError(ErrorCode.CONFIG, 'config file decrypted but its content is not JSON')
  }
}

/** Reference defaults for node number n. */
export function defaultApiConfig (n: number, dirPath: string): ApiConfig {
  return {
    node_address: '127.0.0.1',
    node_port: 20000 + n,
    dir_path: dirPath,
    cfg_data: {
      ports: {
        sender_port: 21000 + n,
        receiver_port: 22000 + 1000 * n,
        ipfs_port: 5002 + n,
        swarm_port: 4002 + n,
        ipfs_api_port: 8081 + n
      },
      bootstrap: [],
      test_bootstrap: [],
      services: {},
      rbtnode: { swarm_host: '127.0.0.1' }
    }
  }
}
