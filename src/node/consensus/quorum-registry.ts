import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import type { KvStore } from '../../storage/kv-store.js'
import type { NodeConfigStore } from '../../storage/node-config-store.js'
import { removeLeftoversSync, writeFileDurableSync } from '../../util/durable-write.js'
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

  /**
   * Reads the node secret at start. A secret file of the wrong length (a crash cut short the old
   * in-place write) is written again when nothing is sealed with it yet, which loses nothing;
   * otherwise the start stops with the cause and the way out. Returns a notice for the log, if any.
   */
  async open (): Promise<string | undefined> {
    removeLeftoversSync(this.secretPath)
    if (!existsSync(this.secretPath)) return undefined
    const held = readFileSync(this.secretPath)
    if (held.length === 32) { this.secret = held; return undefined }
    const sealed = await this.sealedWithSecret()
    if (sealed.length === 0) {
      this.secret = this.createSecret()
      return `${this.secretPath} was ${held.length === 0 ? 'empty' : `${held.length} bytes long`} (its first write was cut short) and nothing was sealed with it: a new node secret was written`
    }
    throw new RbtError(ErrorCode.CONFIG, `${this.secretPath} is damaged (${held.length} bytes, 32 expected; cut short by a crash while it was written), and it seals ${sealed.join(', ')}: ` +
      'restore it from a backup; or move it away and set those up again (setupquorum for each quorum DID, the faucet DID and the explorer settings are made again)')
  }

  /** What is sealed with the node secret on this node, by kind. */
  private async sealedWithSecret (): Promise<string[]> {
    const out: string[] = []
    for await (const _k of this.store.collection('quorum-setup').keys({ limit: 1 })) out.push('quorum setups')
    const s = this.config.data.settings
    if (s.faucet !== undefined) out.push('the faucet DID\'s password')
    const services = s.services as Record<string, { passwordSealed?: string }> | undefined
    if (services !== undefined && Object.values(services).some((v) => v?.passwordSealed !== undefined)) out.push('the explorer database password')
    return out
  }

  private createSecret (): Buffer {
    const secret = randomBytes(32)
    writeFileDurableSync(this.secretPath, secret, { mode: 0o600 })
    return secret
  }

  private key (): Buffer {
    if (this.secret !== undefined) return this.secret
    if (existsSync(this.secretPath)) this.secret = readFileSync(this.secretPath)
    else this.secret = this.createSecret()
    if (this.secret.length !== 32) {
      const n = this.secret.length
      this.secret = undefined
      throw new RbtError(ErrorCode.CONFIG, `${this.secretPath} is damaged (${n} bytes, 32 expected): restart the node, which writes a new one when nothing is sealed with it, or restore it from a backup`)
    }
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
