/**
 * Identity: creating and importing DIDs, signing with them through a prompt (the two-step flow),
 * announcing DID → peer mappings, resolving remote DIDs and verifying their signatures.
 *
 * Pure domain code: the network is reached through the narrow `DidNetwork` interface and the
 * peer key through `PeerKeys`; both are provided by the node layer once the core runs.
 */
import { randomBytes } from 'node:crypto'
import { constants as fsConstants } from 'node:fs'
import { open } from 'node:fs/promises'
import type { Collection, KvStore } from '../../storage/kv-store.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { silentLogger, type Logger } from '../../util/logger.js'
import { bytesToHex, sha3Hex, utf8 } from '../../wallet/bytes.js'
import { createDid, type CreateDidInput } from '../../wallet/create-did.js'
import { DidSigner, openKeyFile, verifyDidSignature, verifyPvtSignature, type LocalDid, type SignAnswer, type SignPrompt, type SignRequest } from '../../wallet/did-crypto.js'
import { assertDidType, checkDidDocument, decodeDidDocument, DidFile, DidType, encodeDidDocument, type DidDocument } from '../../wallet/did-document.js'
import { didFromPublicFiles, isValidDid } from '../../wallet/did-string.js'
import { readDidImage, readShareImage } from '../../wallet/image.js'
import { p256Pkcs8Der, p256PublicPem, parsePublicKeyPem, generateKeyPair, type Curve, type KeyPair } from '../../wallet/keys.js'
import { DID_HEAD_LEN, SHARE_HEAD_LEN, shareSign, shareVerify } from '../../wallet/nlss.js'
import { decodePem, encodePem, PEM_ENCRYPTED_PRIVATE_KEY, PEM_PRIVATE_KEY } from '../../wallet/pem.js'
import { isSealedMnemonic, PEM_SEALED_KEY, sealMnemonic, sealPrivateKey, unsealMnemonic } from '../../wallet/seal.js'
import {
  announcementDigest, decodeAnnouncement, isDidSigned, preferAnnouncement, type DidAnnouncement
} from './announcement.js'
import { DidStore, type DidRecord } from './did-store.js'

/** How the identity service reaches other nodes. Implemented by the node layer over libp2p. */
export interface DidNetwork {
  /** Publishes over gossip and stores the DHT record; failures of either half are reported, not thrown. */
  announce: (a: DidAnnouncement) => Promise<{ gossipPeers: number, dht: boolean }>
  /** The DHT record of a DID, if any node holds one. */
  lookup: (did: string) => Promise<DidAnnouncement | undefined>
  /** A DID's encoded public document, from the given peer. */
  fetchDocument: (peerId: string, did: string) => Promise<Uint8Array>
  connectedPeers: () => string[]
}

/** This node's libp2p identity key, and verification of other peers' keys. */
export interface PeerKeys {
  readonly peerId: string
  sign: (data: Uint8Array) => Promise<Uint8Array>
  verify: (peerId: string, data: Uint8Array, signature: Uint8Array) => Promise<boolean>
}

/** The DID → peer map also written by POST /node/add_peers. */
export interface PeerBook {
  get: (did: string) => { peerId: string, didType?: number } | undefined
  set: (did: string, peerId: string, didType?: number) => Promise<void>
}

export interface CreateRequest {
  type: DidType
  password?: string
  quorumPassword?: string
  secret?: string
  /** hex public key: binds the DID to an external key (lite secp256k1, or standard P-256). */
  publicKeyHex?: string
  /** An existing private key file's bytes (types 0 and 4). */
  privateKey?: Uint8Array
  /**
   * A private key file on the node's disk, named by path (types 0 and 4): a regular file holding
   * a PEM private key that `password` opens. Every failure to use it is the one KEY_FILE_REFUSED error.
   */
  privateKeyPath?: string
  mnemonic?: string
  childPath?: number
  /** Uploaded files by canonical name: image.png, did.png, pubShare.png, pubKey.pem. */
  files?: Record<string, Uint8Array>
}

export interface SetupRequest {
  type: DidType
  password?: string
  quorumPassword?: string
  files: Record<string, Uint8Array>
}

export interface IdentityOptions {
  store: DidStore
  kv: KvStore
  peers: PeerBook
  network: () => DidNetwork | undefined
  peerKeys: () => PeerKeys | undefined
  logger?: Logger
}

interface KnownAnnouncement { announcement: DidAnnouncement, verifiedAt: number }

export const DEFAULT_PASSWORD = 'mypassword'
/** Largest private key file read from the node's disk (`private_key` path). */
export const MAX_KEY_FILE_BYTES = 16 * 1024

const bad = (m: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, m)

/**
 * The one answer for a `private_key` path that cannot be used, whatever the reason (missing, not
 * a regular file, a symbolic link, too large, not PEM, not a private key, wrong password, wrong
 * curve): the API must not tell the files of the node's disk apart, nor echo their content.
 */
export const KEY_FILE_REFUSED = `private_key: cannot use this file as a PEM private key (a regular file of at most ${MAX_KEY_FILE_BYTES} bytes holding a PEM private key that the given password opens)`
const PRIVATE_PEM_TYPES = new Set([PEM_SEALED_KEY, PEM_ENCRYPTED_PRIVATE_KEY, PEM_PRIVATE_KEY, 'EC PRIVATE KEY'])

function invalidDid (_did: unknown): RbtError {
  return new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
}

function toB64 (b: Uint8Array): string { return Buffer.from(b).toString('base64') }
function fromB64 (s: string, what: string): Uint8Array {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s)) throw bad(`${what} must be base64`)
  return new Uint8Array(Buffer.from(s, 'base64'))
}

async function sealKey (kp: KeyPair, password: string): Promise<Uint8Array> {
  const plain = kp.curve === 'p256' ? p256Pkcs8Der(kp.privateKey) : kp.privateKey.slice()
  try { return await sealPrivateKey(plain, password) } finally { plain.fill(0) }
}

function samePoint (a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0
}

export class IdentityService {
  readonly store: DidStore
  private readonly known: Collection<KnownAnnouncement>
  private readonly log: Logger
  private readonly inflightDocs = new Map<string, Promise<DidDocument>>()

  constructor (private readonly opts: IdentityOptions) {
    this.store = opts.store
    this.known = opts.kv.collection<KnownAnnouncement>('did-announcements')
    this.log = opts.logger ?? silentLogger
  }

  async open (): Promise<void> {
    await this.store.open()
    this.mnemonicsMigrated = this.migrateMnemonics().catch((e) => { this.log.debug(`sealing plaintext mnemonics: ${errorMessage(e)}`) })
  }

  /**
   * The audit line of a signing that does not run through the two-step engine (the announcement a
   * DID signs when it is created or set up, with the password of the request), in the engine's format.
   */
  private async audited<T> (operation: string, did: string, sign: () => Promise<T>): Promise<T> {
    try {
      const r = await sign()
      this.log.info(`audit: sign ${operation} did=${did} outcome=ok`)
      return r
    } catch (e) {
      this.log.info(`audit: sign ${operation} did=${did} outcome=failed code=${e instanceof RbtError ? e.code : ErrorCode.INTERNAL}`)
      throw e
    }
  }

  // ------------------------------------------------------------------ mnemonics

  /** Settles when the start-up pass over plaintext mnemonics is done (tests, shutdown). */
  mnemonicsMigrated: Promise<void> = Promise.resolve()
  /** DIDs whose mnemonic.txt is known to be sealed (or absent): the unlock hook skips them. */
  private readonly mnemonicSealed = new Set<string>()
  private readonly mnemonicSealing = new Map<string, Promise<boolean>>()

  /**
   * A data dir from before mnemonics were sealed holds lite DIDs' `mnemonic.txt` in plaintext.
   * At start each is sealed with the default password when that password opens the DID's key
   * (a DID created without one); the others are sealed at their DID's first successful unlock,
   * the first moment their password is known (signerFor, quorum setup).
   */
  private async migrateMnemonics (): Promise<void> {
    for (const rec of await this.store.list()) {
      if (!rec.privateFiles.includes(DidFile.MNEMONIC)) continue
      const file = await this.store.privateFile(rec.did, DidFile.MNEMONIC)
      if (file === undefined || isSealedMnemonic(file)) { this.mnemonicSealed.add(rec.did); continue }
      if (await this.sealMnemonic(rec.did, DEFAULT_PASSWORD).catch(() => false)) continue
      this.log.info(`the mnemonic of ${rec.did} is stored in plaintext (an older data dir); it is sealed with the DID's password at its next unlock`)
    }
  }

  /**
   * Seals a plaintext `mnemonic.txt` of `did` with `password`, once `password` opens the DID's
   * private key (so the mnemonic gets the key's password). True when the file is sealed now (or
   * was, or the DID has none); false when the password does not open the key. `checked`: the
   * caller has just opened the key with this password.
   */
  async sealMnemonic (did: string, password: string, checked = false): Promise<boolean> {
    if (this.mnemonicSealed.has(did)) return true
    const running = this.mnemonicSealing.get(did)
    if (running !== undefined) { await running.catch(() => false); return await this.sealMnemonic(did, password, checked) }
    const run = (async () => {
      const file = await this.store.privateFile(did, DidFile.MNEMONIC)
      if (file === undefined || isSealedMnemonic(file)) { this.mnemonicSealed.add(did); return true }
      if (!checked && !await this.opensKey(did, password)) return false
      await this.store.replacePrivateFile(did, DidFile.MNEMONIC, await sealMnemonic(Buffer.from(file).toString('utf8'), password))
      file.fill(0)
      this.mnemonicSealed.add(did)
      this.log.info(`the mnemonic of ${did} is now sealed with its private key password`)
      return true
    })()
    this.mnemonicSealing.set(did, run)
    try { return await run } finally { this.mnemonicSealing.delete(did) }
  }

  private async opensKey (did: string, password: string): Promise<boolean> {
    const local = await this.store.local(did)
    if (local?.pvtKey === undefined) return false
    try {
      await openKeyFile(local.doc.type === DidType.LITE ? 'secp256k1' : 'p256', local.pvtKey, password)
      return true
    } catch { return false }
  }

  /**
   * The mnemonic of a local lite DID, given its private key password: the only way the node reads
   * one. A sealed file opens with the password (WRONG_PASSWORD otherwise); a plaintext one from an
   * older data dir is handed out only when the password opens the key, and is sealed on the way.
   */
  async mnemonic (did: string, password: string): Promise<string> {
    if (!isValidDid(did)) throw invalidDid(did)
    const file = await this.store.privateFile(did, DidFile.MNEMONIC)
    if (file === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `DID ${did} has no mnemonic on this node`)
    if (isSealedMnemonic(file)) return await unsealMnemonic(file, password)
    if (!await this.sealMnemonic(did, password)) throw new RbtError(ErrorCode.WRONG_PASSWORD, 'wrong password')
    return Buffer.from(file).toString('utf8').trim()
  }

  private ownPeerId (): string | undefined { return this.opts.peerKeys()?.peerId }

  // ------------------------------------------------------------------ create

  /** Creates a DID of any supported type; the result is stored and announced (best effort). */
  async create (req: CreateRequest): Promise<{ did: string, peerId: string | null }> {
    const type = assertDidType(req.type)
    if (type === DidType.CHILD) throw bad('child DIDs (type 3) are not supported')
    const files = req.files ?? {}
    const password = req.password ?? DEFAULT_PASSWORD
    const input: CreateDidInput = { type, password, quorumPassword: req.quorumPassword ?? password }
    if (req.secret !== undefined) input.secret = req.secret
    if (files[DidFile.IMAGE] !== undefined) input.image = files[DidFile.IMAGE]
    if (req.privateKeyPath !== undefined) {
      if (req.privateKey !== undefined) throw bad('give the private key either as a path or as an upload, not both')
      if (type !== DidType.BASIC && type !== DidType.LITE) throw bad('private_key applies to basic (0) and lite (4) DIDs')
      if (req.publicKeyHex !== undefined || req.mnemonic !== undefined) throw bad('give only one of public_key, private_key and mnemonic')
      input.privateKey = await this.openKeyFileAt(req.privateKeyPath, type === DidType.BASIC ? 'p256' : 'secp256k1', password)
    } else if (req.privateKey !== undefined) input.privateKey = req.privateKey
    if (req.mnemonic !== undefined) input.mnemonic = req.mnemonic
    if (req.childPath !== undefined) input.childPath = req.childPath
    switch (type) {
      case DidType.BASIC:
        if (req.publicKeyHex !== undefined) throw bad('a basic DID keeps its key on the node: public_key applies to lite (4) and standard (1) DIDs')
        break
      case DidType.STANDARD:
        if (files[DidFile.IMAGE] === undefined) throw bad('a standard DID needs a 256x256 PNG image (image.png)')
        if (files[DidFile.PUB_KEY] !== undefined) input.publicKeyPem = files[DidFile.PUB_KEY]
        else if (req.publicKeyHex !== undefined) input.publicKeyHex = req.publicKeyHex
        else throw bad('a standard DID needs the client public key (pubKey.pem upload or public_key hex)')
        break
      case DidType.WALLET:
        input.publicFiles = {}
        for (const n of [DidFile.DID_IMAGE, DidFile.PUB_SHARE, DidFile.PUB_KEY]) {
          if (files[n] === undefined) throw bad(`a wallet DID needs ${n} (upload did.png, pubShare.png and pubKey.pem)`)
          input.publicFiles[n] = files[n]
        }
        break
      case DidType.LITE:
        if (req.publicKeyHex !== undefined) {
          if (req.mnemonic !== undefined || req.privateKey !== undefined) throw bad('give only one of public_key, private_key and mnemonic')
          input.publicKeyHex = req.publicKeyHex
        } else if (req.privateKey !== undefined && req.mnemonic !== undefined) {
          throw bad('give only one of private_key and mnemonic')
        }
        break
    }
    const created = await createDid(input)
    // A DID's id is derived from its key material: the same creation asked again (the same
    // mnemonic and child path, key file or external public key: a script run twice) names the DID
    // already here. That is answered as done, changing nothing, provided the password given opens
    // the key the node holds for it; otherwise it is refused (docs/api.md, "Running a script again").
    if (await this.store.has(created.did)) {
      if (created.privateFiles[DidFile.PVT_KEY] !== undefined && !await this.opensKey(created.did, password)) {
        throw new RbtError(ErrorCode.CONFLICT, `DID ${created.did} already exists on this node, and the password given does not open its private key`)
      }
      this.log.info(`DID ${created.did} is already on this node (created again from the same key): nothing changed`)
      return { did: created.did, peerId: this.ownPeerId() ?? null }
    }
    const doc: DidDocument = { did: created.did, type, files: created.publicFiles }
    // Sign the announcement now, while the password is at hand, when the node holds the key.
    let announcement: DidAnnouncement | undefined
    const peerId = this.ownPeerId()
    const pvtKey = created.privateFiles[DidFile.PVT_KEY]
    if (peerId !== undefined) {
      if (pvtKey !== undefined) {
        const local: LocalDid = { doc, pvtKey }
        announcement = await this.audited('create-announcement', created.did, async () => await this.signAnnouncement(new DidSigner(local, async () => ({ password })), created.did, type, peerId))
      } else {
        announcement = await this.hostingClaim(created.did, type)
      }
    }
    await this.store.add(created.did, type, created.publicFiles, created.privateFiles, announcement)
    this.log.info(`DID ${created.did} (type ${type}) created`)
    if (announcement !== undefined) this.publishInBackground(announcement)
    return { did: created.did, peerId: peerId ?? null }
  }

  /**
   * Opens a key file named by path on the node's disk (the `private_key` option) and returns its
   * private scalar. Only a regular file is read (opened without following a final symbolic link and
   * without waiting on a FIFO, then checked on the open descriptor), at most MAX_KEY_FILE_BYTES;
   * it must be one PEM private key block that `password` opens for `curve`. Every failure is
   * KEY_FILE_REFUSED.
   */
  private async openKeyFileAt (path: string, curve: Curve, password: string): Promise<Uint8Array> {
    const refused = (): RbtError => new RbtError(ErrorCode.INVALID_INPUT, KEY_FILE_REFUSED)
    if (typeof path !== 'string' || path === '' || path.includes('\0')) throw refused()
    const buf = Buffer.alloc(MAX_KEY_FILE_BYTES + 1)
    let n = 0
    try {
      const fh = await open(path, fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0))
      try {
        const st = await fh.stat()
        if (!st.isFile() || st.size > MAX_KEY_FILE_BYTES) throw refused()
        for (;;) {
          const { bytesRead } = await fh.read(buf, n, buf.length - n, n)
          if (bytesRead === 0) break
          n += bytesRead
          if (n > MAX_KEY_FILE_BYTES) throw refused()
        }
      } finally { await fh.close() }
      const file = new Uint8Array(buf.subarray(0, n))
      if (!PRIVATE_PEM_TYPES.has(decodePem(file).type)) throw refused()
      const kp = await openKeyFile(curve, file, password)
      return kp.privateKey
    } catch {
      throw refused()
    } finally { buf.fill(0) }
  }

  // ------------------------------------------------------------------ setup from files

  /**
   * Sets a DID up from existing files (a DID made elsewhere, e.g. by a reference node). Every file
   * is checked: images decode at the right size, the private share matches the public images,
   * private keys open with the given passwords and match the public keys. Keys are re-sealed in
   * this node's format.
   */
  async setup (req: SetupRequest): Promise<{ did: string, peerId: string | null }> {
    const type = assertDidType(req.type)
    if (type === DidType.CHILD) throw bad('child DIDs (type 3) are not supported')
    const f = req.files
    const password = req.password ?? DEFAULT_PASSWORD
    const quorumPassword = req.quorumPassword !== undefined && req.quorumPassword !== '' ? req.quorumPassword : password
    const pub: Record<string, Uint8Array> = {}
    const pvt: Record<string, Uint8Array> = {}
    const need = (n: string): Uint8Array => {
      const b = f[n]
      if (b === undefined) throw bad(`a type ${type} DID setup needs ${n}`)
      return b
    }
    const openMatching = async (curve: Curve, file: Uint8Array, pwd: string, pubPem: Uint8Array, what: string): Promise<KeyPair> => {
      const kp = await openKeyFile(curve, file, pwd)
      const pk = parsePublicKeyPem(pubPem)
      if (pk.curve !== curve || !samePoint(pk.point, kp.publicKey)) throw bad(`${what} does not match its public key`)
      return kp
    }

    if (type !== DidType.LITE) {
      pub[DidFile.DID_IMAGE] = need(DidFile.DID_IMAGE)
      pub[DidFile.PUB_SHARE] = need(DidFile.PUB_SHARE)
      const didStream = readDidImage(pub[DidFile.DID_IMAGE], 'did.png')
      const pubStream = readShareImage(pub[DidFile.PUB_SHARE], 'pubShare.png')
      if (type !== DidType.WALLET) {
        pvt[DidFile.PVT_SHARE] = need(DidFile.PVT_SHARE)
        const pvtStream = readShareImage(pvt[DidFile.PVT_SHARE], 'pvtShare.png')
        const probe = bytesToHex(randomBytes(32))
        const s = shareSign(probe, pvtStream.subarray(0, SHARE_HEAD_LEN))
        if (shareVerify(probe, s.shareSig, didStream.subarray(0, DID_HEAD_LEN), pubStream.subarray(0, SHARE_HEAD_LEN)) === null) {
          throw bad('pvtShare.png does not belong to did.png and pubShare.png')
        }
      }
      if (type === DidType.BASIC && f[DidFile.PUB_KEY] === undefined && f[DidFile.PVT_KEY] === undefined) {
        // as the reference: a basic DID set up without keys gets a new pair
        const kp = generateKeyPair('p256')
        pub[DidFile.PUB_KEY] = p256PublicPem(kp.publicKey)
        pvt[DidFile.PVT_KEY] = await sealKey(kp, password)
      } else {
        pub[DidFile.PUB_KEY] = need(DidFile.PUB_KEY)
        if (parsePublicKeyPem(pub[DidFile.PUB_KEY]).curve !== 'p256') throw bad('pubKey.pem must be a P-256 key for this DID type')
        if (type === DidType.BASIC) {
          pvt[DidFile.PVT_KEY] = await sealKey(await openMatching('p256', need(DidFile.PVT_KEY), password, pub[DidFile.PUB_KEY], 'pvtKey.pem'), password)
        }
      }
      if (f[DidFile.QUORUM_PUB_KEY] !== undefined || f[DidFile.QUORUM_PVT_KEY] !== undefined) {
        pub[DidFile.QUORUM_PUB_KEY] = need(DidFile.QUORUM_PUB_KEY)
        const qk = await openMatching('p256', need(DidFile.QUORUM_PVT_KEY), quorumPassword, pub[DidFile.QUORUM_PUB_KEY], 'quorumPrivKey.pem')
        pvt[DidFile.QUORUM_PVT_KEY] = await sealKey(qk, quorumPassword)
      } else {
        const q = generateKeyPair('p256')
        pub[DidFile.QUORUM_PUB_KEY] = p256PublicPem(q.publicKey)
        pvt[DidFile.QUORUM_PVT_KEY] = await sealKey(q, quorumPassword)
      }
    } else {
      pub[DidFile.PUB_KEY] = need(DidFile.PUB_KEY)
      if (parsePublicKeyPem(pub[DidFile.PUB_KEY]).curve !== 'secp256k1') throw bad('pubKey.pem of a lite DID must be a secp256k1 key')
      if (f[DidFile.PVT_KEY] !== undefined) {
        pvt[DidFile.PVT_KEY] = await sealKey(await openMatching('secp256k1', f[DidFile.PVT_KEY], password, pub[DidFile.PUB_KEY], 'pvtKey.pem'), password)
      }
    }
    const did = didFromPublicFiles(pub)
    checkDidDocument({ did, type, files: pub })
    // the same files set up again (a script run twice): the DID already here, nothing changed
    if (await this.store.has(did)) {
      if ((await this.store.local(did))?.pvtKey !== undefined && !await this.opensKey(did, password)) {
        throw new RbtError(ErrorCode.CONFLICT, `DID ${did} already exists on this node, and the password given does not open its private key`)
      }
      this.log.info(`DID ${did} is already on this node (set up again from the same files): nothing changed`)
      return { did, peerId: this.ownPeerId() ?? null }
    }
    const peerId = this.ownPeerId()
    let announcement: DidAnnouncement | undefined
    if (peerId !== undefined) {
      announcement = pvt[DidFile.PVT_KEY] !== undefined
        ? await this.audited('setup-announcement', did, async () => await this.signAnnouncement(new DidSigner({ doc: { did, type, files: pub }, pvtKey: pvt[DidFile.PVT_KEY] }, async () => ({ password })), did, type, peerId))
        : await this.hostingClaim(did, type)
    }
    await this.store.add(did, type, pub, pvt, announcement)
    this.log.info(`DID ${did} (type ${type}) set up from files`)
    if (announcement !== undefined) this.publishInBackground(announcement)
    return { did, peerId: peerId ?? null }
  }

  async list (): Promise<string[]> {
    return (await this.store.list()).map((r) => r.did)
  }

  async isLocal (did: string): Promise<boolean> { return await this.store.has(did) }

  async record (did: string): Promise<DidRecord | undefined> { return await this.store.get(did) }

  // ------------------------------------------------------------------ signing

  /**
   * A signer for a local DID bound to a prompt (usually the two-step engine's). Every answer is
   * checked before the signer uses it: a password must open the key (WRONG_PASSWORD otherwise),
   * an external signature must verify (VERIFICATION_FAILED otherwise). An engine prompt keeps the
   * challenge open when a check fails; the key is opened once per password.
   */
  async signerFor (did: string, prompt: SignPrompt): Promise<DidSigner> {
    if (!isValidDid(did)) throw invalidDid(did)
    const local = await this.store.local(did)
    if (local === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `DID ${did} is not on this node`)
    const doc = local.doc
    const withCheck = prompt as (req: SignRequest, opts?: { validate?: (a: SignAnswer) => Promise<void> }) => Promise<SignAnswer>
    const checked: SignPrompt = async (req) => await withCheck(req, {
      validate: async (ans) => {
        if (req.kind === 'password') {
          if (local.pvtKey === undefined) throw new RbtError(ErrorCode.INTERNAL, `no private key held for ${did}`)
          const kp = await openKeyFile(doc.type === DidType.LITE ? 'secp256k1' : 'p256', local.pvtKey, ans.password ?? '')
          const pk = parsePublicKeyPem(doc.files[DidFile.PUB_KEY]!)
          if (!samePoint(pk.point, kp.publicKey)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `the private key of ${did} does not match its public key`)
          // hand the opened key to the signer so it is not derived a second time
          local.pvtKey = encodePem(PEM_PRIVATE_KEY, kp.curve === 'p256' ? p256Pkcs8Der(kp.privateKey) : kp.privateKey)
          // the password is known now: a plaintext mnemonic from an older data dir is sealed with it
          if (!this.mnemonicSealed.has(did)) await this.sealMnemonic(did, ans.password ?? '', true).catch((e) => { this.log.warn(`sealing the mnemonic of ${did}: ${errorMessage(e)}`) })
          return
        }
        const sig = ans.signature ?? new Uint8Array(0)
        const hash = req.hash ?? ''
        const good = doc.type === DidType.WALLET && !req.onlyPrivKey
          ? verifyDidSignature(doc, hash, { shareSig: ans.pixels ?? new Uint8Array(0), keySig: sig })
          : verifyPvtSignature(doc, utf8(hash), sig)
        if (!good) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'the signature does not verify against the DID; sign the given hash and try again')
      }
    })
    return new DidSigner(local, checked)
  }

  /** The text an arbitrary message is signed as: ASCII hex of its SHA3-256, as every Rubix signature. */
  static arbitraryDigest (msg: string): string { return sha3Hex(utf8(msg)) }

  /** Signs an arbitrary message (`PvtSign` over its SHA3 hex). Returns base64 DER. */
  async signArbitrary (did: string, msg: string, prompt: SignPrompt): Promise<string> {
    const signer = await this.signerFor(did, prompt)
    return toB64(await signer.pvtSign(IdentityService.arbitraryDigest(msg)))
  }

  /** Verifies an arbitrary-message signature with the DID's public document (fetched if remote). */
  async verifyArbitrary (did: string, msg: string, signatureB64: string): Promise<boolean> {
    if (!isValidDid(did)) throw invalidDid(did)
    const sig = fromB64(signatureB64.trim(), 'signature')
    if (sig.length === 0) throw bad('signature is empty')
    const doc = await this.documentOf(did)
    return verifyPvtSignature(doc, IdentityService.arbitraryDigest(msg), sig)
  }

  // ------------------------------------------------------------------ announcements

  private async signAnnouncement (signer: DidSigner, did: string, type: DidType, peerId: string): Promise<DidAnnouncement> {
    const time = new Date().toISOString()
    const base = { peer_id: peerId, did, did_type: type, time }
    const sig = await signer.pvtSign(announcementDigest(base))
    return { ...base, signature: toB64(sig) }
  }

  private async hostingClaim (did: string, type: DidType): Promise<DidAnnouncement | undefined> {
    const keys = this.opts.peerKeys()
    if (keys === undefined) return undefined
    const base = { peer_id: keys.peerId, did, did_type: type, time: new Date().toISOString() }
    return { ...base, signature: '', peer_signature: toB64(await keys.sign(utf8(announcementDigest(base)))) }
  }

  /**
   * Registers a local DID with the network: signs the announcement with the DID (through the
   * prompt), stores it and publishes it over gossip and the DHT.
   */
  async register (did: string, prompt: SignPrompt): Promise<{ gossipPeers: number, dht: boolean }> {
    if (!isValidDid(did)) throw invalidDid(did)
    const rec = await this.store.get(did)
    if (rec === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'DID is not local, cannot register')
    const peerId = this.ownPeerId()
    const net = this.opts.network()
    if (peerId === undefined || net === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
    const a = await this.signAnnouncement(await this.signerFor(did, prompt), did, rec.type, peerId)
    await this.store.setAnnouncement(did, a)
    return await net.announce(a)
  }

  private publishInBackground (a: DidAnnouncement): void {
    const net = this.opts.network()
    if (net === undefined) return
    net.announce(a)
      .then((r) => { this.log.debug(`announced ${a.did}: gossip to ${r.gossipPeers} peers, DHT ${r.dht ? 'stored' : 'not stored'}`) })
      .catch((e) => { this.log.warn(`announcing ${a.did} failed: ${errorMessage(e)}`) })
  }

  /**
   * Publishes every local DID again (at core start and periodically, so DHT records stay alive
   * and late nodes find them). DIDs without a current announcement for this peer get a hosting claim.
   */
  async republishAll (): Promise<number> {
    const peerId = this.ownPeerId()
    const net = this.opts.network()
    if (peerId === undefined || net === undefined) return 0
    let n = 0
    for (const rec of await this.store.list()) {
      let a = rec.announcement
      if (a === undefined || a.peer_id !== peerId) {
        a = await this.hostingClaim(rec.did, rec.type)
        if (a === undefined) continue
        await this.store.setAnnouncement(rec.did, a)
      }
      try {
        await net.announce(a)
        n++
      } catch (e) {
        this.log.warn(`re-announcing ${rec.did} failed: ${errorMessage(e)}`)
      }
    }
    return n
  }

  /** Checks an announcement's signature. A DID-signed one needs the DID document (fetched from the announcing peer). */
  async verifyAnnouncement (a: DidAnnouncement): Promise<boolean> {
    const digest = announcementDigest(a)
    if (isDidSigned(a)) {
      const doc = await this.documentOf(a.did, a.peer_id)
      if (doc.type !== a.did_type) return false
      return verifyPvtSignature(doc, digest, fromB64(a.signature, 'signature'))
    }
    const keys = this.opts.peerKeys()
    if (keys === undefined || a.peer_signature === undefined) return false
    return await keys.verify(a.peer_id, utf8(digest), fromB64(a.peer_signature, 'peer_signature'))
  }

  /**
   * Handles an announcement received from the network (gossip). It is stored only when it
   * verifies and is preferable to what is known. `from` is the gossip originator, which must be
   * the announced peer for a hosting claim. Returns whether it was stored.
   */
  async receiveAnnouncement (bytes: Uint8Array, from?: string): Promise<boolean> {
    const a = decodeAnnouncement(bytes)
    if (!isDidSigned(a) && from !== undefined && from !== a.peer_id) return false
    if (await this.store.has(a.did)) return false
    const prev = await this.known.get(a.did)
    if (prev !== undefined && preferAnnouncement(prev.announcement, a) === prev.announcement) return false
    if (!await this.verifyAnnouncement(a)) {
      this.log.warn(`dropping announcement of ${a.did} by ${a.peer_id}: signature does not verify`)
      return false
    }
    await this.remember(a)
    return true
  }

  /** Keeps a DHT record met while fetching a document, once it verifies (the document is stored by then). */
  private async rememberIfValid (a: DidAnnouncement): Promise<void> {
    try {
      const prev = await this.known.get(a.did)
      if (prev !== undefined && preferAnnouncement(prev.announcement, a) === prev.announcement) return
      if (await this.verifyAnnouncement(a)) await this.remember(a)
      else this.log.warn(`the DHT record of ${a.did} does not verify`)
    } catch (e) {
      this.log.debug(`the DHT record of ${a.did} could not be checked: ${errorMessage(e)}`)
    }
  }

  private async remember (a: DidAnnouncement): Promise<void> {
    await this.known.put(a.did, { announcement: a, verifiedAt: Date.now() })
    await this.opts.peers.set(a.did, a.peer_id, a.did_type)
  }

  /** The announcement this node would serve for a DID (local or verified remote). */
  async announcementOf (did: string): Promise<DidAnnouncement | undefined> {
    const rec = await this.store.get(did)
    if (rec?.announcement !== undefined) return rec.announcement
    return (await this.known.get(did))?.announcement
  }

  /**
   * The peer hosting a DID: this node for local DIDs, then the peer map (announcements and
   * add_peers), then the DHT record (verified before use). NOT_FOUND when nobody knows.
   */
  async resolvePeer (did: string): Promise<{ peerId: string, didType?: number, source: 'local' | 'peers' | 'dht' }> {
    if (!isValidDid(did)) throw invalidDid(did)
    const rec = await this.store.get(did)
    const own = this.ownPeerId()
    if (rec !== undefined && own !== undefined) return { peerId: own, didType: rec.type, source: 'local' }
    const entry = this.opts.peers.get(did)
    if (entry !== undefined) return { peerId: entry.peerId, ...(entry.didType !== undefined ? { didType: entry.didType } : {}), source: 'peers' }
    const net = this.opts.network()
    if (net === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
    const a = await net.lookup(did)
    if (a === undefined || a.did !== did) throw new RbtError(ErrorCode.NOT_FOUND, `DID ${did} could not be resolved: no peer announces it`)
    if (!await this.verifyAnnouncement(a)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `the DHT record of ${did} does not verify`)
    await this.remember(a)
    return { peerId: a.peer_id, didType: a.did_type, source: 'dht' }
  }

  // ------------------------------------------------------------------ documents

  /** A local DID's public document, encoded (what peers fetch); cached remote ones are served too. */
  async encodedDocument (did: string): Promise<Uint8Array> {
    const doc = await this.store.document(did) ?? await this.store.remoteDocument(did)
    if (doc === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `DID ${did} is not known here`)
    return encodeDidDocument(doc)
  }

  /**
   * The public document of any DID: local, cached, or fetched from the network (hint peer first,
   * then the resolved host, then connected peers). A fetched document must hash to its DID.
   */
  async documentOf (did: string, hintPeer?: string): Promise<DidDocument> {
    if (!isValidDid(did)) throw invalidDid(did)
    const local = await this.store.document(did)
    if (local !== undefined) return local
    const cached = await this.store.remoteDocument(did)
    if (cached !== undefined) return cached
    let p = this.inflightDocs.get(did)
    if (p === undefined) {
      p = this.fetchDocument(did, hintPeer).finally(() => { this.inflightDocs.delete(did) })
      this.inflightDocs.set(did, p)
    }
    return await p
  }

  private async fetchDocument (did: string, hintPeer?: string): Promise<DidDocument> {
    const net = this.opts.network()
    if (net === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
    const tried = new Set<string>()
    const own = this.ownPeerId()
    // The DHT record only suggests where to ask: it is not checked here, because checking it
    // needs this very document (resolvePeer would wait on this fetch). The document proves
    // itself by hashing to the DID; the record is checked and kept once the document is in.
    let record: DidAnnouncement | undefined
    const candidates: Array<() => Promise<string | undefined>> = [
      async () => hintPeer,
      async () => this.opts.peers.get(did)?.peerId,
      async () => {
        record = await net.lookup(did).catch(() => undefined)
        return record?.did === did ? record.peer_id : undefined
      },
      ...net.connectedPeers().map((p) => async () => p)
    ]
    let lastErr: unknown
    for (const next of candidates) {
      const peer = await next()
      if (peer === undefined || peer === own || tried.has(peer)) continue
      tried.add(peer)
      try {
        const doc = decodeDidDocument(await net.fetchDocument(peer, did))
        if (doc.did !== did) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `peer ${peer} answered with the document of another DID`)
        checkDidDocument(doc)
        await this.store.putRemoteDocument(doc)
        if (record?.did === did) await this.rememberIfValid(record)
        return doc
      } catch (e) {
        lastErr = e
        this.log.debug(`fetching the document of ${did} from ${peer} failed: ${errorMessage(e)}`)
      }
    }
    throw new RbtError(ErrorCode.NOT_FOUND, `the public document of DID ${did} could not be fetched from the network${lastErr !== undefined ? ': ' + errorMessage(lastErr) : ''}`)
  }
}

