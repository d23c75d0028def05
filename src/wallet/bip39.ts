/**
 * Lite DID keys: 24-word BIP-39 mnemonic → seed (empty passphrase) → BIP-32 master →
 * one child `m/<childPath>` (non-hardened below 2^31) → secp256k1 key.
 */
import { pbkdf2Sync } from 'node:crypto'
import { generateMnemonic as scureGenerate, validateMnemonic as scureValidate } from '@scure/bip39'
import { wordlist } from '@scure/bip39/wordlists/english.js'
import { HDKey } from '@scure/bip32'
import { RbtError, ErrorCode } from '../util/errors.js'
import type { KeyPair } from './keys.js'
import { keyPairFromPrivate } from './keys.js'

export function generateMnemonic (): string {
  return scureGenerate(wordlist, 256)
}

export function normaliseMnemonic (mnemonic: string): string {
  if (typeof mnemonic !== 'string') throw new RbtError(ErrorCode.INVALID_INPUT, 'mnemonic must be a string')
  return mnemonic.normalize('NFKD').trim().split(/\s+/).join(' ')
}

export function isValidMnemonic (mnemonic: string): boolean {
  try { return scureValidate(normaliseMnemonic(mnemonic), wordlist) } catch { return false }
}

/** BIP-39 seed (PBKDF2-HMAC-SHA512, 2048 rounds, salt "mnemonic" + passphrase). */
export function mnemonicToSeed (mnemonic: string, passphrase = ''): Uint8Array {
  const m = normaliseMnemonic(mnemonic)
  if (!scureValidate(m, wordlist)) throw new RbtError(ErrorCode.INVALID_INPUT, 'mnemonic is not a valid BIP-39 English mnemonic')
  return new Uint8Array(pbkdf2Sync(Buffer.from(m, 'utf8'), Buffer.from('mnemonic' + passphrase.normalize('NFKD'), 'utf8'), 2048, 64, 'sha512'))
}

export function checkChildPath (childPath: unknown): number {
  if (typeof childPath !== 'number' || !Number.isInteger(childPath) || childPath < 0 || childPath > 0xffffffff) {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'childPath must be an integer in 0..2^32-1')
  }
  return childPath
}

/** The lite key for `mnemonic` at `m/<childPath>`. */
export function liteKeyFromMnemonic (mnemonic: string, childPath = 0): KeyPair {
  const seed = mnemonicToSeed(mnemonic)
  const child = HDKey.fromMasterSeed(seed).deriveChild(checkChildPath(childPath))
  const priv = child.privateKey
  if (priv === null) throw new RbtError(ErrorCode.INTERNAL, 'BIP-32 derivation produced no private key')
  return keyPairFromPrivate('secp256k1', priv)
}
