/**
 * Building a DID's full file set. Pure apart from randomness: no disk, no network.
 * The result's publicFiles are exactly what the DID string hashes; privateFiles are sealed.
 */
import { randomBytes } from 'node:crypto'
import { RbtError, ErrorCode } from '../util/errors.js'
import { hexToBytes, utf8 } from './bytes.js'
import { generateMnemonic, liteKeyFromMnemonic, checkChildPath } from './bip39.js'
import { didFromPublicFiles } from './did-string.js'
import { assertDidType, DidFile, DidType, type DidDocument } from './did-document.js'
import { DID_IMAGE_SIZE, DID_STREAM_LEN, readDidImage, readShareImage, SHARE_HEIGHT, SHARE_WIDTH, writePngRgb } from './image.js'
import { generateKeyPair, keyPairFromPrivate, p256FromPkcs8Der, p256Pkcs8Der, p256PublicPem, parsePublicKeyPem, rawPublicPem, type Curve, type KeyPair } from './keys.js'
import { DEFAULT_DID_SECRET, generateShares, xorKeyStream } from './nlss.js'
import { sealMnemonic, sealPrivateKey, unsealPrivateKey } from './seal.js'
import { signMessage, verifyMessage } from './signing.js'
import { decodePem } from './pem.js'

/** Quorum-key password used by the reference when neither password is given. */
export const DEFAULT_QUORUM_PASSWORD = 'Rubix#PrivKey'

export interface CreateDidInput {
  type: DidType
  /** Private-key password (`priv_pwd`). Required whenever the node keeps a pvtKey.pem. */
  password?: string
  /** Quorum-key password; falls back to `password`, then to "Rubix#PrivKey". */
  quorumPassword?: string
  /** Image secret (types 0/1). Default "My DID Secret". */
  secret?: string
  /** Hardware-address text mixed into the image key stream. Default "". */
  mac?: string
  /** 256×256 PNG (types 0/1). Type 0 without an image gets random pixels. */
  image?: Uint8Array
  /** Type 2: the client's did.png, pubShare.png and pubKey.pem. */
  publicFiles?: Record<string, Uint8Array>
  /** Type 1: the client's pubKey.pem (P-256). */
  publicKeyPem?: Uint8Array
  /** Type 1: P-256 point as hex; type 4: an external secp256k1 key (33 or 65 bytes, kept as given). */
  publicKeyHex?: string
  /**
   * Types 0/4: an existing private key instead of a new one: a key file (PEM, plain or sealed with
   * `password`) or the raw 32-byte scalar.
   */
  privateKey?: Uint8Array
  /** Type 4: mnemonic to derive from (a new 24-word one is generated when absent). */
  mnemonic?: string
  /** Type 4: BIP-32 child index, default 0. */
  childPath?: number
}

export interface CreatedDid {
  did: string
  type: DidType
  publicFiles: Record<string, Uint8Array>
  /** Sealed keys, pvtShare.png, and for lite DIDs mnemonic.txt (sealed like the key, with the same password). */
  privateFiles: Record<string, Uint8Array>
  mnemonic?: string
}

const bad = (m: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, m)

function needPassword (p: string | undefined, why: string): string {
  if (typeof p !== 'string' || p.length === 0) throw bad(`a password is required ${why}`)
  return p
}

async function existingKey (curve: Curve, key: Uint8Array, password: string | undefined): Promise<KeyPair> {
  if (!(key instanceof Uint8Array)) throw bad('privateKey must be bytes')
  if (key.length === 32) return keyPairFromPrivate(curve, key)
  decodePem(key)
  const plain = await unsealPrivateKey(key, password ?? '')
  try {
    if (curve === 'secp256k1') {
      if (plain.length !== 32) throw bad('lite private key must be a 32-byte scalar')
      return keyPairFromPrivate(curve, plain)
    }
    return p256FromPkcs8Der(plain)
  } finally { plain.fill(0) }
}

async function sealKey (kp: KeyPair, password: string): Promise<Uint8Array> {
  const plain = kp.curve === 'p256' ? p256Pkcs8Der(kp.privateKey) : kp.privateKey.slice()
  try { return await sealPrivateKey(plain, password) } finally { plain.fill(0) }
}

/** did.png plus both share images from a 256×256 pixel stream. */
export function makeDidImages (pixels: Uint8Array, secret: string, mac = ''): { didPng: Uint8Array, pvtSharePng: Uint8Array, pubSharePng: Uint8Array } {
  const stream = xorKeyStream(pixels, secret, mac)
  const { pvt, pub } = generateShares(stream)
  return {
    didPng: writePngRgb(stream, DID_IMAGE_SIZE, DID_IMAGE_SIZE),
    pvtSharePng: writePngRgb(pvt, SHARE_WIDTH, SHARE_HEIGHT),
    pubSharePng: writePngRgb(pub, SHARE_WIDTH, SHARE_HEIGHT)
  }
}

async function quorumFiles (input: CreateDidInput, pub: Record<string, Uint8Array>, pvt: Record<string, Uint8Array>): Promise<void> {
  const pwd = input.quorumPassword !== undefined && input.quorumPassword !== ''
    ? input.quorumPassword
    : (input.password !== undefined && input.password !== '' ? input.password : DEFAULT_QUORUM_PASSWORD)
  const q = generateKeyPair('p256')
  pub[DidFile.QUORUM_PUB_KEY] = p256PublicPem(q.publicKey)
  pvt[DidFile.QUORUM_PVT_KEY] = await sealKey(q, pwd)
}

function imagePixels (input: CreateDidInput): Uint8Array {
  if (input.image !== undefined) return readDidImage(input.image, 'image')
  if (input.type === DidType.BASIC) return new Uint8Array(randomBytes(DID_STREAM_LEN))
  throw bad('a 256x256 PNG image is required for this DID type')
}

/** Create the files for a new DID of any supported type (0, 1, 2, 4). */
export async function createDid (input: CreateDidInput): Promise<CreatedDid> {
  const type = assertDidType(input?.type)
  const pub: Record<string, Uint8Array> = {}
  const pvt: Record<string, Uint8Array> = {}
  let mnemonic: string | undefined

  switch (type) {
    case DidType.BASIC:
    case DidType.STANDARD: {
      const pixels = imagePixels(input)
      const img = makeDidImages(pixels, input.secret ?? DEFAULT_DID_SECRET, input.mac ?? '')
      pub[DidFile.DID_IMAGE] = img.didPng
      pub[DidFile.PUB_SHARE] = img.pubSharePng
      pvt[DidFile.PVT_SHARE] = img.pvtSharePng
      if (type === DidType.BASIC) {
        const pwd = needPassword(input.password, 'for a basic DID')
        const kp = input.privateKey !== undefined ? await existingKey('p256', input.privateKey, input.password) : generateKeyPair('p256')
        pub[DidFile.PUB_KEY] = p256PublicPem(kp.publicKey)
        pvt[DidFile.PVT_KEY] = await sealKey(kp, pwd)
      } else {
        pub[DidFile.PUB_KEY] = clientP256Key(input)
      }
      await quorumFiles(input, pub, pvt)
      break
    }
    case DidType.WALLET: {
      const f = input.publicFiles ?? {}
      const didPng = f[DidFile.DID_IMAGE]; const pubShare = f[DidFile.PUB_SHARE]; const pubKey = f[DidFile.PUB_KEY]
      if (didPng === undefined || pubShare === undefined || pubKey === undefined) throw bad('a wallet DID needs did.png, pubShare.png and pubKey.pem')
      readDidImage(didPng, 'did.png')
      readShareImage(pubShare, 'pubShare.png')
      if (parsePublicKeyPem(pubKey).curve !== 'p256') throw bad('pubKey.pem of a wallet DID must be a P-256 key')
      pub[DidFile.DID_IMAGE] = didPng; pub[DidFile.PUB_SHARE] = pubShare; pub[DidFile.PUB_KEY] = pubKey
      await quorumFiles(input, pub, pvt)
      break
    }
    case DidType.LITE: {
      if (input.publicKeyHex !== undefined) {
        pub[DidFile.PUB_KEY] = rawPublicPem('secp256k1', hexToBytes(input.publicKeyHex, 'publicKeyHex'))
        break
      }
      const pwd = needPassword(input.password, 'for a lite DID')
      let kp: KeyPair
      if (input.privateKey !== undefined) {
        kp = await existingKey('secp256k1', input.privateKey, input.password)
      } else {
        mnemonic = input.mnemonic ?? generateMnemonic()
        kp = liteKeyFromMnemonic(mnemonic, checkChildPath(input.childPath ?? 0))
        pvt[DidFile.MNEMONIC] = await sealMnemonic(mnemonic, pwd)
      }
      // Self-check as the reference does: sign and verify "test".
      if (!verifyMessage({ curve: 'secp256k1', point: kp.publicKey }, utf8('test'), signMessage('secp256k1', kp.privateKey, utf8('test')))) {
        throw new RbtError(ErrorCode.INTERNAL, 'lite key self-check failed')
      }
      pub[DidFile.PUB_KEY] = rawPublicPem('secp256k1', kp.publicKey)
      pvt[DidFile.PVT_KEY] = await sealKey(kp, pwd)
      break
    }
    default:
      throw bad(`creating DIDs of type ${type} is not supported`)
  }
  const result: CreatedDid = { did: didFromPublicFiles(pub), type, publicFiles: pub, privateFiles: pvt }
  if (mnemonic !== undefined) result.mnemonic = mnemonic
  return result
}

function clientP256Key (input: CreateDidInput): Uint8Array {
  if (input.publicKeyPem !== undefined) {
    const k = parsePublicKeyPem(input.publicKeyPem)
    if (k.curve !== 'p256') throw bad('pubKey.pem of a standard DID must be a P-256 key')
    return input.publicKeyPem
  }
  if (input.publicKeyHex !== undefined) return p256PublicPem(hexToBytes(input.publicKeyHex, 'publicKeyHex'))
  throw bad('a standard DID needs the client public key (publicKeyPem or publicKeyHex)')
}

/** The public document of a created DID. */
export function didDocumentOf (created: CreatedDid): DidDocument {
  return { did: created.did, type: created.type, files: created.publicFiles }
}
