import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import type { KvStore } from '../../storage/kv-store.js'
import type { NodeConfigStore } from '../../storage/node-config-store.js'
import { ErrorCode, RbtError } from '../../util/errors.js'

/**
 * The quorum list (DIDs this node asks to validate its transfers; kept in node.json) and the
 * quorum setups of this node's own DIDs. A setup survives restarts: its passwords are sealed at
 * rest with a random node secret (file quorum.secret, mode 0600) with AES-256-GCM, in the
 * database collection `quorum-setup`, and reopened at start.
 */
export interface QuorumSetupSecret { did: string, password: string, privPassword: string }

interface SealedSetup { did: string, nonce: string, data: string, at: number }

export class QuorumRegistry {
  private secret?: Buffer

  constructor (private readonly config: NodeConfigStore, private readonly store: KvStore, private readonly secretPath: string) {}

  list (): string[] {
    const q = this.config.data.settings.quorums
    return Array.isArray(q) ? q.filter((x): x is string => typeof x === 'string') : []
  }

  async add (dids: string[]): Promise<string[]> {
    return await this.config.update((d) => {
      const cur = Array.isArray(d.settings.quorums) ? d.settings.quorums as string[] : []
      const dup = dids.filter((x) => cur.includes(x))
      if (dup.length > 0 && dup.length === dids.length) throw new RbtError(ErrorCode.CONFLICT, `Failed to add quorums, quorum ${dup[0]} already exists`)
      d.settings.quorums = [...new Set([...cur, ...dids])]
      return d.settings.quorums as string[]
    })
  }

  async removeAll (): Promise<void> {
    await this.config.update((d) => { d.settings.quorums = [] })
  }

  private key (): Buffer {
    if (this.secret !== undefined) return this.secret
    if (existsSync(this.secretPath)) this.secret = readFileSync(this.secretPath)
    else {
      this.secret = randomBytes(32)
      writeFileSync(this.secretPath, this.secret, { mode: 0o600 })
    }
    if (this.secret.length !== 32) throw new RbtError(ErrorCode.CONFIG, `${this.secretPath} is damaged`)
    return this.secret
  }

  /** Seals a small secret (e.g. the faucet DID's password) with the node secret. */
  sealText (label: string, text: string): string {
    const nonce = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', this.key(), nonce)
    c.setAAD(Buffer.from(label))
    return Buffer.concat([nonce, c.update(text, 'utf8'), c.final(), c.getAuthTag()]).toString('base64')
  }

  unsealText (label: string, sealed: string): string {
    const b = Buffer.from(sealed, 'base64')
    const d = createDecipheriv('aes-256-gcm', this.key(), b.subarray(0, 12))
    d.setAAD(Buffer.from(label))
    d.setAuthTag(b.subarray(b.length - 16))
    return Buffer.concat([d.update(b.subarray(12, b.length - 16)), d.final()]).toString('utf8')
  }

  async saveSetup (s: QuorumSetupSecret): Promise<void> {
    const nonce = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', this.key(), nonce)
    c.setAAD(Buffer.from(s.did))
    const data = Buffer.concat([c.update(JSON.stringify({ p: s.password, q: s.privPassword })), c.final(), c.getAuthTag()])
    const rec: SealedSetup = { did: s.did, nonce: nonce.toString('base64'), data: data.toString('base64'), at: Date.now() }
    await this.store.batch([{ type: 'put', collection: 'quorum-setup', key: s.did, value: rec }])
  }

  async loadSetups (): Promise<QuorumSetupSecret[]> {
    const out: QuorumSetupSecret[] = []
    for await (const [, r] of this.store.collection<SealedSetup>('quorum-setup').entries()) {
      const blob = Buffer.from(r.data, 'base64')
      const d = createDecipheriv('aes-256-gcm', this.key(), Buffer.from(r.nonce, 'base64'))
      d.setAAD(Buffer.from(r.did))
      d.setAuthTag(blob.subarray(blob.length - 16))
      const plain = JSON.parse(Buffer.concat([d.update(blob.subarray(0, blob.length - 16)), d.final()]).toString('utf8')) as { p: string, q: string }
      out.push({ did: r.did, password: plain.p, privPassword: plain.q })
    }
    return out
  }
}
