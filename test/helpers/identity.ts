/** Test material for identity tests: PNG images written with pngjs, wallet DID files, independent DID vectors. */
import { PNG } from 'pngjs'
import { HDKey } from '@scure/bip32'
import { mnemonicToSeedSync } from '@scure/bip39'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { base32, cidV1, goPem, lenField, varintField } from '../unit/wallet/helpers.js'
import { makeDidImages } from '../../src/wallet/create-did.js'
import { generateKeyPair, p256PublicPem, type KeyPair } from '../../src/wallet/keys.js'
import { readShareImage } from '../../src/wallet/image.js'
import { shareSign } from '../../src/wallet/nlss.js'
import { signMessage } from '../../src/wallet/signing.js'
import { readDidImage } from '../../src/wallet/image.js'

/** A width×height RGB PNG with a deterministic pattern. */
export function testPng (width = 256, height = 256, seed = 1): Uint8Array {
  const png = new PNG({ width, height })
  for (let i = 0; i < width * height; i++) {
    png.data[i * 4] = (i * 7 + seed) & 0xff
    png.data[i * 4 + 1] = (i * 13 + seed * 3) & 0xff
    png.data[i * 4 + 2] = (i * 29 + seed * 5) & 0xff
    png.data[i * 4 + 3] = 255
  }
  return new Uint8Array(PNG.sync.write(png))
}

/** What a wallet (type 2) client holds: its images and P-256 key, made locally. */
export interface WalletMaterial {
  didPng: Uint8Array
  pubSharePng: Uint8Array
  pvtSharePng: Uint8Array
  pubKeyPem: Uint8Array
  key: KeyPair
  /** first bytes of the private share stream, what image signing needs */
  pvtHead: Uint8Array
}

export function walletMaterial (seed = 3): WalletMaterial {
  const pixels = readDidImage(testPng(256, 256, seed))
  const img = makeDidImages(pixels, 'My DID Secret')
  const key = generateKeyPair('p256')
  return {
    didPng: img.didPng,
    pubSharePng: img.pubSharePng,
    pvtSharePng: img.pvtSharePng,
    pubKeyPem: p256PublicPem(key.publicKey),
    key,
    pvtHead: readShareImage(img.pvtSharePng).slice(0, 256)
  }
}

/** The wallet client's answer to a challenge: a key signature over ASCII(hash), plus the share part for image signatures. */
export function walletAnswer (w: WalletMaterial, hashB64: string, onlyPrivKey: boolean): { signature: string, pixels?: string } {
  const hash = Buffer.from(hashB64, 'base64').toString('latin1')
  if (onlyPrivKey) return { signature: Buffer.from(signMessage('p256', w.key.privateKey, new Uint8Array(Buffer.from(hash, 'latin1')))).toString('base64') }
  const s = shareSign(hash, w.pvtHead)
  return {
    signature: Buffer.from(signMessage('p256', w.key.privateKey, new Uint8Array(Buffer.from(s.keyDigestHex)))).toString('base64'),
    pixels: Buffer.from(s.shareSig).toString('base64')
  }
}

/**
 * A lite DID computed by hand from a mnemonic (BIP-39 seed, BIP-32 m/<child>, uncompressed
 * secp256k1 point in a Go-style PEM, one raw leaf in a dag-pb directory): independent of src/wallet.
 */
export function liteDidByHand (mnemonic: string, child = 0): string {
  const node = HDKey.fromMasterSeed(mnemonicToSeedSync(mnemonic)).deriveChild(child)
  const point = secp256k1.getPublicKey(node.privateKey!, false)
  const pem = goPem('PUBLIC KEY', point)
  const link = [...lenField(1, cidV1(0x55, pem)), ...lenField(2, [...Buffer.from('pubKey.pem')]), ...varintField(3, pem.length)]
  const dir = Uint8Array.from([...lenField(2, link), ...lenField(1, [0x08, 0x01])])
  return 'b' + base32(cidV1(0x70, dir))
}

export const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon art'
