/**
 * Private keys at rest. Two formats:
 *
 * - Reference format (import only, or export for a reference node): PEM `ENCRYPTED PRIVATE KEY`
 *   whose body is nonce(12) ‖ AES-256-GCM ciphertext ‖ tag(16), key = SHA-256(password).
 * - Our format (everything we write): PEM `RBT SEALED PRIVATE KEY` whose body is
 *   "RBS1" ‖ logN ‖ r ‖ p ‖ salt(16) ‖ nonce(12) ‖ ciphertext ‖ tag(16), key = scrypt(password, salt),
 *   with the header bytes (magic through salt) bound as AES-GCM associated data.
 *
 * See docs/decisions/0002-key-sealing.md for the reasoning and the cost parameters.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, scrypt as scryptCb, scryptSync } from 'node:crypto'
import { RbtError, ErrorCode } from '../util/errors.js'
import { concatBytes, utf8 } from './bytes.js'
import { decodePem, encodePem, PEM_ENCRYPTED_PRIVATE_KEY, PEM_PRIVATE_KEY } from './pem.js'

export const PEM_SEALED_KEY = 'RBT SEALED PRIVATE KEY'
const MAGIC = utf8('RBS1')
/** scrypt cost: N = 2^14, r = 8, p = 1 (16 MiB, ~60-70 ms per derivation on a 2-core VM). */
export const SCRYPT_LOG_N = 14
export const SCRYPT_R = 8
export const SCRYPT_P = 1
const SALT_LEN = 16
const NONCE_LEN = 12
const TAG_LEN = 16
const HEADER_LEN = MAGIC.length + 3 + SALT_LEN
/** Refuse blobs that ask for absurd scrypt work (a tampered file must not hang the node). */
const MAX_LOG_N = 20

export interface ScryptParams { logN: number, r: number, p: number }
const DEFAULT_PARAMS: ScryptParams = { logN: SCRYPT_LOG_N, r: SCRYPT_R, p: SCRYPT_P }

function checkPassword (password: string): void {
  if (typeof password !== 'string') throw new RbtError(ErrorCode.INVALID_INPUT, 'password must be a string')
}

function scryptOpts (p: ScryptParams): { N: number, r: number, p: number, maxmem: number } {
  return { N: 2 ** p.logN, r: p.r, p: p.p, maxmem: 256 * 2 ** p.logN * p.r + 1024 * 1024 }
}

function deriveKeySync (password: string, salt: Uint8Array, p: ScryptParams): Buffer {
  return scryptSync(Buffer.from(password, 'utf8'), salt, 32, scryptOpts(p))
}

/**
 * Derived keys of recent unseals, so signing with the same key file and password again (a transfer
 * after a transfer) does not pay scrypt again. The entry is found by a keyed hash of salt,
 * parameters and password under a secret of this process, so a wrong password never hits it, and
 * every unseal still decrypts and authenticates the file. Entries live `kdfCacheMs` (default
 * 5 minutes; RBTNODE_KDF_CACHE_MS=0 turns the cache off) in memory only.
 */
const kdfCache = new Map<string, { key: Buffer, until: number }>()
const kdfSecret = randomBytes(32)
const KDF_CACHE_MAX = 256
const kdfCacheMs = (): number => {
  const v = Number(process.env.RBTNODE_KDF_CACHE_MS ?? 300_000)
  return Number.isFinite(v) && v > 0 ? v : 0
}

async function deriveKey (password: string, salt: Uint8Array, p: ScryptParams): Promise<Buffer> {
  const ttl = kdfCacheMs()
  const id = ttl > 0 ? createHmac('sha256', kdfSecret).update(salt).update(Uint8Array.of(p.logN, p.r, p.p)).update(password, 'utf8').digest('base64') : ''
  const now = Date.now()
  const hit = ttl > 0 ? kdfCache.get(id) : undefined
  if (hit !== undefined && hit.until > now) return Buffer.from(hit.key)
  const key: Buffer = await new Promise((resolve, reject) => {
    scryptCb(Buffer.from(password, 'utf8'), salt, 32, scryptOpts(p), (err, k) => { if (err !== null) reject(err); else resolve(k) })
  })
  if (ttl > 0) {
    for (const [k, v] of kdfCache) if (v.until <= now || kdfCache.size >= KDF_CACHE_MAX) { v.key.fill(0); kdfCache.delete(k) } else break
    kdfCache.set(id, { key: Buffer.from(key), until: now + ttl })
  }
  return key
}

/** Forgets every cached derived key (tests; an operator changing a password). */
export function clearKdfCache (): void {
  for (const v of kdfCache.values()) v.key.fill(0)
  kdfCache.clear()
}

function gcmSeal (key: Uint8Array, nonce: Uint8Array, plain: Uint8Array, aad?: Uint8Array): Uint8Array {
  const c = createCipheriv('aes-256-gcm', key, nonce)
  if (aad !== undefined) c.setAAD(aad)
  const ct = Buffer.concat([c.update(plain), c.final()])
  return concatBytes(ct, c.getAuthTag())
}

function gcmOpen (key: Uint8Array, nonce: Uint8Array, sealed: Uint8Array, aad?: Uint8Array): Uint8Array {
  if (sealed.length < TAG_LEN) throw new RbtError(ErrorCode.INVALID_INPUT, 'sealed key is truncated')
  const d = createDecipheriv('aes-256-gcm', key, nonce)
  if (aad !== undefined) d.setAAD(aad)
  d.setAuthTag(sealed.subarray(sealed.length - TAG_LEN))
  const out = d.update(sealed.subarray(0, sealed.length - TAG_LEN))
  try {
    return new Uint8Array(Buffer.concat([out, d.final()]))
  } catch {
    out.fill(0)
    throw new RbtError(ErrorCode.WRONG_PASSWORD, 'wrong password')
  }
}

// ---------------------------------------------------------------- reference format

/** Raw reference blob: nonce ‖ ciphertext ‖ tag with key SHA-256(password). */
export function sealReference (plain: Uint8Array, password: string): Uint8Array {
  checkPassword(password)
  const key = createHash('sha256').update(password, 'utf8').digest()
  const nonce = randomBytes(NONCE_LEN)
  return concatBytes(nonce, gcmSeal(key, nonce, plain))
}

export function unsealReference (blob: Uint8Array, password: string): Uint8Array {
  checkPassword(password)
  if (blob.length < NONCE_LEN + TAG_LEN) throw new RbtError(ErrorCode.INVALID_INPUT, 'sealed key is truncated')
  const key = createHash('sha256').update(password, 'utf8').digest()
  return gcmOpen(key, blob.subarray(0, NONCE_LEN), blob.subarray(NONCE_LEN))
}

/** A reference-format key file (for handing a key back to a reference node). */
export function sealReferencePem (plain: Uint8Array, password: string): Uint8Array {
  if (password === '') return encodePem(PEM_PRIVATE_KEY, plain)
  return encodePem(PEM_ENCRYPTED_PRIVATE_KEY, sealReference(plain, password))
}

// ---------------------------------------------------------------- our format

function header (salt: Uint8Array, p: ScryptParams): Uint8Array {
  return concatBytes(MAGIC, Uint8Array.of(p.logN, p.r, p.p), salt)
}

function parseOurs (blob: Uint8Array): { head: Uint8Array, salt: Uint8Array, nonce: Uint8Array, sealed: Uint8Array, params: ScryptParams } {
  if (blob.length < HEADER_LEN + NONCE_LEN + TAG_LEN || !MAGIC.every((v, i) => blob[i] === v)) {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'sealed key has an unknown format')
  }
  const params = { logN: blob[4]!, r: blob[5]!, p: blob[6]! }
  if (params.logN < 10 || params.logN > MAX_LOG_N || params.r < 1 || params.r > 32 || params.p < 1 || params.p > 16) {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'sealed key has out-of-range KDF parameters')
  }
  return {
    head: blob.subarray(0, HEADER_LEN),
    salt: blob.subarray(7, HEADER_LEN),
    nonce: blob.subarray(HEADER_LEN, HEADER_LEN + NONCE_LEN),
    sealed: blob.subarray(HEADER_LEN + NONCE_LEN),
    params
  }
}

function requirePassword (password: string): void {
  checkPassword(password)
  if (password.length === 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'a non-empty password is required to seal a key')
}

/** Seal `plain` into a key file in our format (async: scrypt runs off the event loop). */
export async function sealPrivateKey (plain: Uint8Array, password: string, params: ScryptParams = DEFAULT_PARAMS): Promise<Uint8Array> {
  requirePassword(password)
  const salt = randomBytes(SALT_LEN)
  const head = header(salt, params)
  const key = await deriveKey(password, salt, params)
  const nonce = randomBytes(NONCE_LEN)
  return encodePem(PEM_SEALED_KEY, concatBytes(head, nonce, gcmSeal(key, nonce, plain, head)))
}

export function sealPrivateKeySync (plain: Uint8Array, password: string, params: ScryptParams = DEFAULT_PARAMS): Uint8Array {
  requirePassword(password)
  const salt = randomBytes(SALT_LEN)
  const head = header(salt, params)
  const key = deriveKeySync(password, salt, params)
  const nonce = randomBytes(NONCE_LEN)
  return encodePem(PEM_SEALED_KEY, concatBytes(head, nonce, gcmSeal(key, nonce, plain, head)))
}

export type SealFormat = 'rbt' | 'reference' | 'plain'

/** Which format a key file is in, without opening it. */
export function sealFormat (file: Uint8Array | string): SealFormat {
  const t = decodePem(file).type
  if (t === PEM_SEALED_KEY) return 'rbt'
  if (t === PEM_ENCRYPTED_PRIVATE_KEY) return 'reference'
  if (t === PEM_PRIVATE_KEY || t === 'EC PRIVATE KEY') return 'plain'
  throw new RbtError(ErrorCode.INVALID_INPUT, `not a private key file (PEM ${t})`)
}

/** What opening a key file needs beyond the password: nothing (plain, reference) or our KDF. */
function openWith<T> (file: Uint8Array | string, password: string, ours: (b: ReturnType<typeof parseOurs>) => T, plain: (k: Uint8Array) => T): T {
  checkPassword(password)
  const block = decodePem(file)
  const fmt = sealFormat(file)
  if (fmt === 'plain') return plain(block.bytes)
  if (fmt === 'reference') return plain(unsealReference(block.bytes, password))
  return ours(parseOurs(block.bytes))
}

/**
 * Open a key file of any supported format. Wrong password → RbtError(WRONG_PASSWORD).
 * A plain (unencrypted) reference key file opens with any password, as on the reference node.
 */
export async function unsealPrivateKey (file: Uint8Array | string, password: string): Promise<Uint8Array> {
  return await openWith(file, password,
    async (b) => gcmOpen(await deriveKey(password, b.salt, b.params), b.nonce, b.sealed, b.head),
    async (k) => k)
}

export function unsealPrivateKeySync (file: Uint8Array | string, password: string): Uint8Array {
  return openWith(file, password, (b) => gcmOpen(deriveKeySync(password, b.salt, b.params), b.nonce, b.sealed, b.head), (k) => k)
}

// ---------------------------------------------------------------- mnemonics

/**
 * A lite DID's `mnemonic.txt` is sealed exactly like its private key (our format, the DID's
 * private-key password). Files written before held the words in plaintext; those are told apart
 * by the PEM armour and sealed when the password is next known (docs/decisions/0002-key-sealing.md).
 */
export async function sealMnemonic (words: string, password: string): Promise<Uint8Array> {
  const plain = utf8(words.trim())
  try { return await sealPrivateKey(plain, password) } finally { plain.fill(0) }
}

/** Whether a `mnemonic.txt` is sealed (else it holds the words in plaintext). */
export function isSealedMnemonic (file: Uint8Array): boolean {
  const head = Buffer.from(file.subarray(0, 64)).toString('latin1').trimStart()
  return head.startsWith(`-----BEGIN ${PEM_SEALED_KEY}-----`)
}

/** The words of a sealed `mnemonic.txt`. Wrong password → RbtError(WRONG_PASSWORD). */
export async function unsealMnemonic (file: Uint8Array, password: string): Promise<string> {
  if (!isSealedMnemonic(file)) throw new RbtError(ErrorCode.INVALID_INPUT, 'the mnemonic file is not sealed')
  const plain = await unsealPrivateKey(file, password)
  try { return Buffer.from(plain).toString('utf8') } finally { plain.fill(0) }
}
