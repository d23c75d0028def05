import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../../../src/storage/level-store.js'
import { TokenLedger } from '../../../src/storage/token-ledger.js'
import { levelTokenRepositories, type TokenRepositories } from '../../../src/storage/token-repositories.js'
import { sha3Hex } from '../../../src/tokenchain/index.js'
import { TokenService, type TokenSigner } from '../../../src/tokens/index.js'
import { KeyRing } from '../tokenchain/fixtures.js'

export interface TokenEnv {
  dir: string
  store: LevelStore
  ledger: TokenLedger
  repos: TokenRepositories
  service: TokenService
  ring: KeyRing
  reopen: () => Promise<void>
  close: () => Promise<void>
}

export function ringSigner (ring: KeyRing, did: string): TokenSigner & { calls: number } {
  const s = { did, calls: 0, sign: async (h: string) => { s.calls++; return ring.sign(did, h) } }
  return s
}

/** A token service over a fresh LevelDB in a temp dir, with real P-256 keys per DID. */
export async function tokenEnv (opts: { allowed?: boolean, ring?: KeyRing } = {}): Promise<TokenEnv> {
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-tokens-'))
  const ring = opts.ring ?? new KeyRing()
  const env = {} as TokenEnv
  const build = async (): Promise<void> => {
    const store = new LevelStore(join(dir, 'db'))
    await store.open()
    const ledger = new TokenLedger(store, sha3Hex)
    const repos = levelTokenRepositories(store)
    const service = new TokenService({
      ledger, repos, verifier: ring.verifier,
      localMint: { allowed: opts.allowed ?? true, refusal: 'Local RBT generation is available only on a test network: start the node with -testNet' }
    })
    Object.assign(env, { dir, store, ledger, repos, service, ring })
  }
  await build()
  env.reopen = async () => { await env.store.close(); await build() }
  env.close = async () => { await env.store.close(); rmSync(dir, { recursive: true, force: true }) }
  return env
}
