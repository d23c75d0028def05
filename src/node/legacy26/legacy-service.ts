/**
 * The release-2.6 operations on top of the node's own services (no parallel systems):
 *
 * - a 2.6 key pair (secp256k1, sealed with pvtKeyPass by the wallet's seal) IS a lite DID of this
 *   node: generating keys creates that DID (its sealed pvtKey.pem lives in the DID folder) and
 *   records which DID holds the transaction role and which the quorum role (node.json, settings
 *   `legacy26`). returnKey 1 builds the same files and hands them back without keeping anything;
 * - /startQuorumService is the quorum setup of the quorum-role DID (ConsensusService.setupQuorum),
 *   persisted like any setup;
 * - /initiateTransaction is POST /svc/v1/tx (ConsensusApi.transfer) with the engine's password
 *   challenge answered from the body;
 * - /unpledgeToken computes the proof of work and releases the token through the quorum service.
 *
 * The pledged-tokens file is a view: rewritten from the ledger's Pledged tokens, never read back.
 */
import type { Legacy26Api, Legacy26Body, Legacy26Reply } from '../../api/contract/legacy26.js'
import type { Envelope, PendingSignature } from '../../api/contract/envelope.js'
import { KeyedMutex } from '../../consensus/keyed-mutex.js'
import { generateProof, type UnpledgeProof } from '../../consensus/unpledge-pow.js'
import { PowVerifier, type PowVerifierOptions } from '../../consensus/unpledge-pow-verifier.js'
import { formatAmount, parseTransferAmount } from '../../tokenchain/amount.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { silentLogger, type Logger } from '../../util/logger.js'
import { createDid } from '../../wallet/create-did.js'
import { DidFile, DidType } from '../../wallet/did-document.js'
import { isValidDid } from '../../wallet/did-string.js'
import { generateKeyPair } from '../../wallet/keys.js'
import type { SignAnswer, SignRequest } from '../../wallet/did-crypto.js'
import type { NodeConfigStore } from '../../storage/node-config-store.js'
import type { ConsensusService } from '../consensus/consensus-service.js'
import type { ConsensusApi } from '../consensus/consensus-api.js'
import type { IdentityService } from '../identity/identity-service.js'
import { writeFileDurable } from '../../util/durable-write.js'

export type LegacyRole = 'transaction' | 'quorum'

interface LegacyKeys { transaction?: { did: string, createdAt: number }, quorum?: { did: string, createdAt: number } }

export interface Legacy26Deps {
  identity: Pick<IdentityService, 'create' | 'signerFor'>
  config: NodeConfigStore
  consensus: () => ConsensusService
  consensusApi: Pick<ConsensusApi, 'transfer'>
  signing: {
    complete: (id: string, answer: { password: string }) => Promise<Envelope<unknown>>
    /** a password check under the engine's per-DID backoff (TwoStepEngine.checkPassword) */
    checkPassword: <T>(did: string, check: () => Promise<T>) => Promise<T>
  }
  /** asks the node hosting `pledger` for the proof it stored (undefined: it has none) */
  fetchProof: (pledger: string, token: string, txid: string) => Promise<UnpledgeProof | undefined>
  /** Free RBT of a DID, milli */
  freeMilli: (did: string) => Promise<number>
  /** path of the pledged-tokens view */
  pledgedFile: string
  /** proof-of-work level (hex characters of the suffix) asked of and accepted from proofs */
  powLevel: number
  /** limits of /verifyPoW's checks, which run in worker threads (concurrency, queue, time) */
  powVerifier?: PowVerifierOptions
  log?: Logger
}

const text = (b: Uint8Array | undefined): string => Buffer.from(b ?? new Uint8Array(0)).toString('utf8')

function isChallenge (env: Envelope<unknown>): env is Envelope<PendingSignature> {
  const r = env.result as PendingSignature | null
  return env.status && r !== null && typeof r === 'object' && typeof r.id === 'string' && typeof r.only_priv_key === 'boolean'
}

export class Legacy26Service implements Legacy26Api {
  private readonly log: Logger
  private readonly keysLock = new KeyedMutex()
  private readonly aborter = new AbortController()
  private timer?: NodeJS.Timeout
  private lastView = ''
  private readonly verifier: PowVerifier

  constructor (private readonly d: Legacy26Deps) {
    this.log = d.log ?? silentLogger
    this.verifier = new PowVerifier(d.powVerifier)
  }

  /** Keeps the pledged-tokens view fresh (every `everyMs`, written only when it changed). */
  start (everyMs = 2000): void {
    void this.refreshPledgedFile()
    this.timer = setInterval(() => { void this.refreshPledgedFile() }, everyMs)
    this.timer.unref()
  }

  stop (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.aborter.abort()
    void this.verifier.close()
  }

  private keys (): LegacyKeys {
    return (this.d.config.data.settings.legacy26 ?? {}) as LegacyKeys
  }

  private roleDid (role: LegacyRole): string | undefined { return this.keys()[role]?.did }

  async generateKeys (role: LegacyRole, body: Legacy26Body<'generateEcDSAKeys'>): Promise<Legacy26Reply> {
    const what = role === 'quorum' ? 'Quorum key pair' : 'ECDSA key pair'
    const kp = generateKeyPair('secp256k1')
    try {
      if (body.returnKey === 1) {
        // the same files a kept key pair gets, handed back; nothing stays on the node
        const created = await createDid({ type: DidType.LITE, password: body.pvtKeyPass, privateKey: kp.privateKey })
        return {
          ok: true,
          message: `${what} generated and returned; nothing was kept on this node`,
          data: { did: created.did, privateKey: text(created.privateFiles[DidFile.PVT_KEY]), publicKey: text(created.publicFiles[DidFile.PUB_KEY]) }
        }
      }
      return await this.keysLock.run('keys', async () => {
        const existing = this.roleDid(role)
        if (existing !== undefined) {
          throw new RbtError(ErrorCode.CONFLICT, `${what} already generated on this node (DID ${existing}); use returnKey 1 for a key pair that is not kept`)
        }
        const { did } = await this.d.identity.create({ type: DidType.LITE, password: body.pvtKeyPass, privateKey: kp.privateKey })
        await this.d.config.update((c) => {
          const cur = (c.settings.legacy26 ?? {}) as LegacyKeys
          c.settings.legacy26 = { ...cur, [role]: { did, createdAt: Date.now() } }
        })
        this.log.info(`release-2.6 ${role} keys generated: DID ${did}`)
        return { ok: true, message: `${what} generated`, data: { did } }
      })
    } finally { kp.privateKey.fill(0) }
  }

  async startQuorumService (body: Legacy26Body<'startQuorumService'>): Promise<Legacy26Reply> {
    const did = this.roleDid('quorum')
    if (did === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'no quorum keys on this node: call /generateQuorumKeys first')
    await this.d.consensus().setupQuorum(did, body.pvtKeyPass, body.pvtKeyPass)
    return { ok: true, message: 'Quorum service started', data: { quorumDid: did } }
  }

  async initiateTransaction (body: Legacy26Body<'initiateTransaction'>): Promise<Legacy26Reply> {
    const sender = this.roleDid('transaction')
    if (sender === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'no transaction keys on this node: call /generateEcDSAKeys first')
    const password = body.pvtKeyPass
    if (password === undefined || password === '') throw new RbtError(ErrorCode.INVALID_INPUT, 'pvtKeyPass is required: the password of the keys made with /generateEcDSAKeys')
    if (!isValidDid(body.receiver)) throw new RbtError(ErrorCode.INVALID_DID, `Invalid DID: receiver ${body.receiver}`)
    const amountMilli = parseTransferAmount(body.tokenCount)
    const free = await this.d.freeMilli(sender)
    if (amountMilli > free) throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `Insufficient balance: ${formatAmount(free)} RBT available, ${formatAmount(amountMilli)} RBT requested`)
    // the password opens the key before anything is locked: a wrong one changes nothing
    const check = async (req: SignRequest, opts?: { validate?: (a: SignAnswer) => Promise<void> | void }): Promise<SignAnswer> => {
      const ans = req.kind === 'password' ? { password } : {}
      await opts?.validate?.(ans)
      return ans
    }
    const signer = await this.d.identity.signerFor(sender, check)
    // through the engine's password backoff, like every other password answer
    await this.d.signing.checkPassword(sender, async () => await signer.pvtSign('0'.repeat(64)))
    let env: Envelope<unknown>
    try {
      env = await this.d.consensusApi.transfer({ initiator: sender, owner: body.receiver, rbt: formatAmount(amountMilli), memo: body.comment })
      for (let i = 0; i < 8 && isChallenge(env); i++) env = await this.d.signing.complete((env.result as PendingSignature).id, { password })
    } catch (e) {
      // decided but not yet delivered (or not yet signed by 5): not a success, and the answer names the transaction
      if (!(e instanceof RbtError && (e.code === ErrorCode.DELIVERY_PENDING || e.code === ErrorCode.SIGNING_PENDING))) throw e
      env = { status: false, message: e.message, result: e.details }
    }
    if (isChallenge(env)) throw new RbtError(ErrorCode.INTERNAL, 'the transfer kept asking for signatures')
    const result = env.result as { transactionID?: string } | null
    const response = {
      did: sender,
      receiver: body.receiver,
      tid: result?.transactionID ?? '',
      tokenCount: amountMilli / 1000,
      comment: body.comment,
      type: body.type,
      status: env.status ? 'Success' : result?.transactionID !== undefined ? 'Pending' : 'Failed',
      message: env.message
    }
    return { ok: env.status, message: env.message, data: { response } }
  }

  async unpledgeToken (body: Legacy26Body<'unpledgeToken'>): Promise<Legacy26Reply> {
    const list = (Array.isArray(body.tokenList) ? body.tokenList : body.tokenList.split(',')).map((t) => t.trim()).filter((t) => t !== '')
    if (list.length === 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'tokenList names no token')
    const quorum = this.d.consensus().quorum
    const held = []
    for (const token of [...new Set(list)]) {
      const p = await quorum.pledgeHolding(token)
      if (p === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `token ${token} is not pledged on this node`)
      held.push({ token, pledge: p })
    }
    const proofs: UnpledgeProof[] = []
    const tokens = []
    try {
      for (const { token, pledge } of held) {
        const t0 = Date.now()
        const proof = await generateProof(token, pledge.quorumDid, pledge.txid, { level: this.d.powLevel, signal: this.aborter.signal })
        await quorum.releaseByProof(proof, this.d.powLevel)
        proofs.push(proof)
        tokens.push({ token, pledger: pledge.quorumDid, txid: pledge.txid, level: proof.level, checkpoints: proof.hashes.length, ms: Date.now() - t0 })
        this.log.info(`token ${token} unpledged by proof of work (level ${proof.level}, ${Date.now() - t0} ms)`)
      }
    } finally {
      await this.refreshPledgedFile()
    }
    return { ok: true, message: `${tokens.length} token(s) unpledged`, data: { 'Pledge status': true, tokens, proofs } }
  }

  async verifyPoW (body: Legacy26Body<'verifyPoW'>): Promise<Legacy26Reply> {
    // the proof given, else the one stored here, else the one the pledger's node stored
    const proof = body.proof ??
      await this.d.consensus().quorum.storedProof(body.tokenList, body.transactionID) ??
      await this.d.fetchProof(body.receiver, body.tokenList, body.transactionID)
    if (proof === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `no proof for token ${body.tokenList} and transaction ${body.transactionID} here or at ${body.receiver}'s node`)
    // off the event loop: a proof's segments may be a million hashes each
    const r = await this.verifier.verify(proof, { token: body.tokenList, pledger: body.receiver, txid: body.transactionID }, { minLevel: this.d.powLevel })
    return { ok: true, message: r.valid ? 'Proof verified' : `Proof rejected: ${r.reason ?? 'invalid'}`, data: { 'Release status': r.valid, ...(r.reason !== undefined ? { reason: r.reason } : {}) } }
  }

  /** Rewrites the pledged-tokens view from the ledger when it changed. */
  async refreshPledgedFile (): Promise<void> {
    let svc: ConsensusService
    try { svc = this.d.consensus() } catch { return }
    await this.keysLock.run('view', async () => await this.writeView(svc))
  }

  private async writeView (svc: ConsensusService): Promise<void> {
    try {
      const rows: Array<{ tokenHash: string, pledger: string, txid: string }> = []
      for (const p of await svc.quorum.pledgeSummary()) {
        for (const token of p.tokens) if ((await svc.quorum.pledgeHolding(token))?.txid === p.txid) rows.push({ tokenHash: token, pledger: p.quorumDid, txid: p.txid })
      }
      rows.sort((a, b) => (a.tokenHash < b.tokenHash ? -1 : a.tokenHash > b.tokenHash ? 1 : 0))
      const json = JSON.stringify(rows, null, 2) + '\n'
      if (json === this.lastView) return
      await writeFileDurable(this.d.pledgedFile, json)
      this.lastView = json
    } catch (e) {
      this.log.debug(`pledged-tokens view: ${errorMessage(e)}`)
    }
  }
}
