/**
 * Signing and verification per DID type.
 *
 * Owner signing goes through `DidSigner`, which asks its caller (the node's two-step
 * password/signature engine) for whatever the node does not hold, through an explicit
 * `SignRequest`. Quorum signing goes through `QuorumSigner`, opened once with passwords.
 * Verification needs only the public `DidDocument`; parsed keys and image heads are cached per DID.
 */
import { RbtError, ErrorCode } from '../util/errors.js'
import { Lru } from '../util/lru.js'
import { utf8 } from './bytes.js'
import { checkDidDocument, DidFile, DidType, type DidDocument } from './did-document.js'
import { readDidImage, readShareImage } from './image.js'
import { keyPairFromPrivate, p256FromPkcs8Der, parsePublicKeyPem, type Curve, type KeyPair } from './keys.js'
import { DID_HEAD_LEN, SHARE_HEAD_LEN, shareSign, shareVerify } from './nlss.js'
import { unsealPrivateKey } from './seal.js'
import { signMessage, Verifier } from './signing.js'

/** An image signature: share part ("Pixels", empty for lite DIDs) and key part ("Signature", DER). */
export interface DidSignature {
  shareSig: Uint8Array
  keySig: Uint8Array
}

/**
 * What the node must ask its client for. Mirrors the reference's `{id, mode, hash, only_priv_key}`:
 * - kind 'password': the client answers with the private-key password (hash is null);
 * - kind 'signature': the client signs ASCII(hash) (truncated to 32 bytes) with its key, and for a
 *   wallet DID with onlyPrivKey=false also returns the 32-byte share signature ("Pixels").
 */
export interface SignRequest {
  did: string
  mode: DidType
  kind: 'password' | 'signature'
  hash: string | null
  onlyPrivKey: boolean
}

export interface SignAnswer {
  password?: string
  /** Share signature ("Pixels"), wallet DIDs only. */
  pixels?: Uint8Array
  /** DER key signature ("Signature"). */
  signature?: Uint8Array
}

export type SignPrompt = (req: SignRequest) => Promise<SignAnswer>

/** Local material for a DID this node holds (files as stored, keys still sealed). */
export interface LocalDid {
  doc: DidDocument
  /** pvtShare.png bytes (basic, standard, quorum role; a child DID passes its master's). */
  pvtShare?: Uint8Array
  /** Sealed pvtKey.pem (basic, child, lite with a node-held key). */
  pvtKey?: Uint8Array
  /** Sealed quorumPrivKey.pem (quorum role of non-lite DIDs). */
  quorumKey?: Uint8Array
}

// ------------------------------------------------------------------ caches

interface VerifyMaterial {
  owner: Verifier
  quorum?: Verifier
  didHead?: Uint8Array
  pubHead?: Uint8Array
}

const verifyCache = new Lru<VerifyMaterial>(512)
const pvtHeadCache = new Lru<Uint8Array>(64)

/** Forget cached verification material (tests, or after a DID is deleted). */
export function clearDidCaches (): void { verifyCache.clear(); pvtHeadCache.clear() }

function keyOf (doc: DidDocument): string { return `${doc.did}:${doc.type}` }

/** Parse (and the first time, integrity-check) what verifying this DID needs. */
function materialFor (doc: DidDocument): VerifyMaterial {
  const cached = verifyCache.get(keyOf(doc))
  if (cached !== undefined) return cached
  checkDidDocument(doc)
  const ownerKey = parsePublicKeyPem(doc.files[DidFile.PUB_KEY]!)
  const expected: Curve = doc.type === DidType.LITE ? 'secp256k1' : 'p256'
  if (ownerKey.curve !== expected) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `pubKey.pem of a type ${doc.type} DID must be ${expected}`)
  const m: VerifyMaterial = { owner: new Verifier(ownerKey) }
  if (doc.type !== DidType.LITE) {
    const images = doc.type === DidType.CHILD ? doc.master! : doc
    m.didHead = readDidImage(images.files[DidFile.DID_IMAGE]!, 'did.png').slice(0, DID_HEAD_LEN)
    m.pubHead = readShareImage(images.files[DidFile.PUB_SHARE]!, 'pubShare.png').slice(0, SHARE_HEAD_LEN)
    const q = doc.files[DidFile.QUORUM_PUB_KEY]
    if (q !== undefined) {
      const qk = parsePublicKeyPem(q)
      if (qk.curve !== 'p256') throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'quorumPubKey.pem must be P-256')
      m.quorum = new Verifier(qk)
    }
  }
  verifyCache.set(keyOf(doc), m)
  return m
}

export interface VerifyOptions {
  /** Verify as the DID's quorum role (quorumPubKey.pem for non-lite DIDs). */
  quorum?: boolean
}

function verifierFor (m: VerifyMaterial, doc: DidDocument, opts?: VerifyOptions): Verifier {
  if (opts?.quorum === true && doc.type !== DidType.LITE) {
    if (m.quorum === undefined) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `DID ${doc.did} has no quorum key`)
    return m.quorum
  }
  return m.owner
}

const toBytes = (message: string | Uint8Array): Uint8Array => typeof message === 'string' ? utf8(message) : message

/**
 * Verify an image signature (`Sign`) over a hex hash. Lite DIDs: the share part is ignored and
 * the key signature covers ASCII(hash). Returns false for any bad signature; throws
 * VERIFICATION_FAILED if the document itself is inconsistent (files do not match the DID).
 */
export function verifyDidSignature (doc: DidDocument, hashHex: string, sig: DidSignature, opts?: VerifyOptions): boolean {
  const m = materialFor(doc)
  const v = verifierFor(m, doc, opts)
  if (doc.type === DidType.LITE) return v.verify(utf8(hashHex), sig.keySig)
  const digest = shareVerify(hashHex, sig.shareSig, m.didHead!, m.pubHead!)
  return digest !== null && v.verify(utf8(digest), sig.keySig)
}

/** Verify a plain key signature (`PvtSign`), e.g. a block signature over the ASCII hex block hash. */
export function verifyPvtSignature (doc: DidDocument, message: string | Uint8Array, signature: Uint8Array, opts?: VerifyOptions): boolean {
  const m = materialFor(doc)
  return verifierFor(m, doc, opts).verify(toBytes(message), signature)
}

// ------------------------------------------------------------------ key files

/** Open a sealed key file and return the key pair (P-256 PKCS#8 or a raw secp256k1 scalar inside). */
export async function openKeyFile (curve: Curve, file: Uint8Array, password: string): Promise<KeyPair> {
  const plain = await unsealPrivateKey(file, password)
  try {
    if (curve === 'secp256k1') return keyPairFromPrivate('secp256k1', plain.length === 32 ? plain : leftPad32(plain))
    return p256FromPkcs8Der(plain)
  } finally {
    plain.fill(0)
  }
}

function leftPad32 (b: Uint8Array): Uint8Array {
  if (b.length > 32) throw new RbtError(ErrorCode.INVALID_INPUT, 'secp256k1 private key is longer than 32 bytes')
  const out = new Uint8Array(32); out.set(b, 32 - b.length); return out
}

function pvtShareHead (did: string, png: Uint8Array): Uint8Array {
  let head = pvtHeadCache.get(did)
  if (head === undefined) {
    head = readShareImage(png, 'pvtShare.png').slice(0, SHARE_HEAD_LEN)
    pvtHeadCache.set(did, head)
  }
  return head
}

function assertMatches (doc: DidDocument, kp: KeyPair, pubFile: string): void {
  const pub = parsePublicKeyPem(doc.files[pubFile]!)
  if (pub.curve !== kp.curve || Buffer.compare(Buffer.from(pub.point), Buffer.from(kp.publicKey)) !== 0) {
    throw new RbtError(ErrorCode.VERIFICATION_FAILED, `private key does not match ${pubFile}`)
  }
}

// ------------------------------------------------------------------ owner signing

/**
 * Owner-side signer for one request. It asks for the password at most once (then keeps the
 * opened key for the rest of the request), and asks for external signatures where the type
 * requires them, checking every external answer before using it.
 */
export class DidSigner {
  private key: KeyPair | undefined
  readonly doc: DidDocument

  constructor (private readonly local: LocalDid, private readonly prompt: SignPrompt) {
    this.doc = local.doc
  }

  private request (kind: SignRequest['kind'], hash: string | null, onlyPrivKey: boolean): SignRequest {
    return { did: this.doc.did, mode: this.doc.type, kind, hash, onlyPrivKey }
  }

  private async localKey (): Promise<KeyPair> {
    if (this.key !== undefined) return this.key
    if (this.local.pvtKey === undefined) throw new RbtError(ErrorCode.INTERNAL, `no private key held for ${this.doc.did}`)
    const ans = await this.prompt(this.request('password', null, false))
    if (typeof ans.password !== 'string') throw new RbtError(ErrorCode.INVALID_INPUT, 'password required')
    const kp = await openKeyFile(this.doc.type === DidType.LITE ? 'secp256k1' : 'p256', this.local.pvtKey, ans.password)
    assertMatches(this.doc, kp, DidFile.PUB_KEY)
    this.key = kp
    return kp
  }

  private async external (hash: string, onlyPrivKey: boolean): Promise<SignAnswer> {
    const ans = await this.prompt(this.request('signature', hash, onlyPrivKey))
    if (!(ans.signature instanceof Uint8Array)) throw new RbtError(ErrorCode.INVALID_INPUT, 'signature required')
    return ans
  }

  /**
   * Asks for the password now, when the node holds this DID's key (no-op otherwise, and once the
   * key is open): an operation does this before it takes the DID's lock, so a prompt left open
   * holds nothing another operation of the DID needs. True when signing asks nothing more.
   */
  async unlock (): Promise<boolean> {
    if (!this.holdsKey) return false
    await this.localKey()
    return true
  }

  /** Whether this DID's key is held by the node (otherwise every key use is an external signature). */
  get holdsKey (): boolean {
    return this.local.pvtKey !== undefined && (this.doc.type === DidType.BASIC || this.doc.type === DidType.CHILD || this.doc.type === DidType.LITE)
  }

  /** Image signature (`Sign`) over a hex hash. */
  async sign (hashHex: string): Promise<DidSignature> {
    const t = this.doc.type
    if (t === DidType.LITE) return { shareSig: new Uint8Array(0), keySig: await this.pvtSign(hashHex) }
    if (t === DidType.WALLET) {
      const ans = await this.external(hashHex, false)
      const sig = { shareSig: ans.pixels ?? new Uint8Array(0), keySig: ans.signature! }
      if (!verifyDidSignature(this.doc, hashHex, sig)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'wallet signature does not verify')
      return sig
    }
    if (this.local.pvtShare === undefined) throw new RbtError(ErrorCode.INTERNAL, `no private share held for ${this.doc.did}`)
    const share = shareSign(hashHex, pvtShareHead(this.doc.did, this.local.pvtShare))
    let keySig: Uint8Array
    if (t === DidType.STANDARD) {
      keySig = (await this.external(share.keyDigestHex, false)).signature!
    } else {
      const kp = await this.localKey()
      keySig = signMessage(kp.curve, kp.privateKey, utf8(share.keyDigestHex))
    }
    const sig = { shareSig: share.shareSig, keySig }
    if (!verifyDidSignature(this.doc, hashHex, sig)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'image signature does not verify')
    return sig
  }

  /** Plain key signature (`PvtSign`) over the given text (usually a hex hash) or bytes. */
  async pvtSign (message: string | Uint8Array): Promise<Uint8Array> {
    const msg = toBytes(message)
    let sig: Uint8Array
    if (this.holdsKey) {
      const kp = await this.localKey()
      sig = signMessage(kp.curve, kp.privateKey, msg)
    } else {
      const text = Buffer.from(msg).toString('latin1')
      sig = (await this.external(text, this.doc.type === DidType.WALLET || this.doc.type === DidType.LITE)).signature!
    }
    // a signature from outside is checked; the node's own key was matched to the DID document when opened
    if (!this.holdsKey && !verifyPvtSignature(this.doc, msg, sig)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'key signature does not verify')
    return sig
  }
}

// ------------------------------------------------------------------ quorum signing

export interface QuorumPasswords {
  /** Opens quorumPrivKey.pem (non-lite DIDs). */
  quorumPassword?: string
  /** Opens pvtKey.pem (lite DIDs sign quorum duties with their own key). */
  privatePassword?: string
}

/** A DID acting as quorum: opened once at setup, then signs without prompting. */
export class QuorumSigner {
  private constructor (readonly doc: DidDocument, private readonly key: KeyPair, private readonly pvtHead: Uint8Array | undefined) {}

  static async open (local: LocalDid, passwords: QuorumPasswords): Promise<QuorumSigner> {
    const doc = local.doc
    if (doc.type === DidType.LITE) {
      if (local.pvtKey === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'a lite quorum needs its pvtKey.pem')
      const kp = await openKeyFile('secp256k1', local.pvtKey, passwords.privatePassword ?? '')
      assertMatches(doc, kp, DidFile.PUB_KEY)
      return new QuorumSigner(doc, kp, undefined)
    }
    if (local.quorumKey === undefined || local.pvtShare === undefined) {
      throw new RbtError(ErrorCode.INVALID_INPUT, 'a quorum needs quorumPrivKey.pem and pvtShare.png')
    }
    const kp = await openKeyFile('p256', local.quorumKey, passwords.quorumPassword ?? '')
    assertMatches(doc, kp, DidFile.QUORUM_PUB_KEY)
    return new QuorumSigner(doc, kp, pvtShareHead(doc.did, local.pvtShare))
  }

  sign (hashHex: string): DidSignature {
    if (this.pvtHead === undefined) return { shareSig: new Uint8Array(0), keySig: this.pvtSign(hashHex) }
    const share = shareSign(hashHex, this.pvtHead)
    return { shareSig: share.shareSig, keySig: signMessage(this.key.curve, this.key.privateKey, utf8(share.keyDigestHex)) }
  }

  pvtSign (message: string | Uint8Array): Uint8Array {
    return signMessage(this.key.curve, this.key.privateKey, toBytes(message))
  }
}
