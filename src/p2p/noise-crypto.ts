/**
 * The ChaCha20-Poly1305 that Noise seals every transport message with, on libsodium through the
 * optional `sodium-native` add-on when it loads (and gives the same bytes as node:crypto on a
 * known message), otherwise the Noise library's own (OpenSSL through node:crypto for messages of
 * 1,200 bytes and more, WebAssembly below). Same AEAD (RFC 8439), same bytes on the wire: a peer on
 * one talks to a peer on the other.
 *
 * Why: OpenSSL's binding creates a cipher object per message and returns fresh buffers (the
 * ciphertext, the tag, their join); libsodium seals into one buffer and opens in place, and its
 * core is faster on some CPUs (docs/decisions/0031-noise-on-libsodium.md has the figures). On
 * others (AVX-512) OpenSSL's core is faster past a few KiB: messages of LARGE_BYTES and more go to
 * whichever of the two sealed (and, apart, opened) the first large messages faster, each tried in
 * turn; smaller ones always to libsodium, whose call costs a third of OpenSSL's.
 *
 * `RBTNODE_NOISE_CIPHER=node` in the environment keeps a process on the library's default,
 * `RBTNODE_NOISE_CIPHER=native` on libsodium for every message.
 */
import { defaultCrypto } from '@chainsafe/libp2p-noise/crypto'
import type { ICryptoInterface } from '@chainsafe/libp2p-noise'
import { joinPieces } from '../util/pieces.js'
import { sodiumNative, type SodiumNative } from '../util/sodium-native.js'

const TAG_BYTES = 16
/** Messages of this many bytes and more go to whichever AEAD measured faster on them (below, libsodium's call is cheaper on every CPU measured). */
export const LARGE_BYTES = 8192
/** Large messages each of the two AEADs seals (and opens) while they are measured, in turn, before the faster is kept. */
export const LARGE_TRIALS = 16

export type NoiseCipherChoice = 'auto' | 'native' | 'node'

type Aead = Pick<ICryptoInterface, 'chaCha20Poly1305Encrypt' | 'chaCha20Poly1305Decrypt'>

/**
 * Which of two ways runs an operation on large messages: each in turn for the first
 * 2 × LARGE_TRIALS, then the one with the lower least time per byte (the least, not the mean: a
 * thread preempted in the middle of a message says nothing of the cipher).
 */
class FasterOfTwo {
  private kept: 0 | 1 | undefined
  private tried = 0
  private readonly least = [Infinity, Infinity]

  get chosen (): 0 | 1 | undefined { return this.kept }

  run<T> (bytes: number, ways: readonly [() => T, () => T]): T {
    if (this.kept !== undefined) return ways[this.kept]()
    const which = (this.tried & 1) as 0 | 1
    const t0 = process.hrtime.bigint()
    const out = ways[which]()
    const perByte = Number(process.hrtime.bigint() - t0) / bytes
    if (perByte < this.least[which]!) this.least[which] = perByte
    if (++this.tried >= 2 * LARGE_TRIALS) this.kept = this.least[1]! < this.least[0]! ? 1 : 0
    return out
  }
}

/**
 * libsodium for small messages; for large ones, libsodium or node:crypto, whichever measured
 * faster on this CPU (sealing and opening each measured apart). Both give the same bytes.
 */
export function fasterAead (native: Aead, node: Aead = defaultCrypto): Aead & { readonly large: { seal?: 'native' | 'node', open?: 'native' | 'node' } } {
  const seal = new FasterOfTwo()
  const open = new FasterOfTwo()
  const name = (c: 0 | 1 | undefined): 'native' | 'node' | undefined => c === undefined ? undefined : c === 0 ? 'native' : 'node'
  return {
    get large () {
      const s = name(seal.chosen)
      const o = name(open.chosen)
      return { ...(s !== undefined ? { seal: s } : {}), ...(o !== undefined ? { open: o } : {}) }
    },
    chaCha20Poly1305Encrypt (plaintext, nonce, ad, k) {
      const len = plaintext.byteLength
      if (len < LARGE_BYTES) return native.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k)
      return seal.run(len, [() => native.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k), () => node.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k)])
    },
    chaCha20Poly1305Decrypt (ciphertext, nonce, ad, k, dst) {
      const len = ciphertext.byteLength
      if (len < LARGE_BYTES + TAG_BYTES) return native.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst)
      return open.run(len, [() => native.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst), () => node.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst)])
    }
  }
}

/** True when `a` and `b` share memory without starting at the same byte (in-place needs the same start). */
function overlapsShifted (a: Uint8Array, b: Uint8Array): boolean {
  if (a.buffer !== b.buffer || a.byteOffset === b.byteOffset) return false
  return a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength
}

function sodiumAead (s: SodiumNative): Aead {
  return {
    chaCha20Poly1305Encrypt (plaintext, nonce, ad, k) {
      const len = plaintext.byteLength
      const out = Buffer.allocUnsafe(len + TAG_BYTES)
      const body = out.subarray(0, len)
      let m: Uint8Array = body
      if (plaintext instanceof Uint8Array) m = plaintext
      else joinPieces(plaintext, body)
      s.crypto_aead_chacha20poly1305_ietf_encrypt_detached(body, out.subarray(len), m, ad, null, nonce, k)
      return out
    },
    chaCha20Poly1305Decrypt (ciphertext, nonce, ad, k, dst) {
      const len = ciphertext.byteLength - TAG_BYTES
      if (len < 0) throw new Error('Invalid chacha20poly1305 decryption: message shorter than its tag')
      const fits = dst !== undefined && dst.byteLength === len
      let c: Uint8Array
      let mac: Uint8Array
      let ownC = false
      if (ciphertext instanceof Uint8Array) {
        c = ciphertext.subarray(0, len)
        mac = ciphertext.subarray(len)
      } else {
        // a message split over several reads: join its body once, where the plaintext goes
        c = fits ? dst : Buffer.allocUnsafe(len)
        ownC = !fits
        joinPieces(ciphertext.sublist(0, len), c)
        mac = ciphertext.subarray(len)
      }
      // the caller's `dst` when it can take the plaintext (the same memory as the body opens in
      // place); our own joined body; never the caller's ciphertext unasked
      const m = fits && !overlapsShifted(dst, c) ? dst : ownC ? c : Buffer.allocUnsafe(len)
      try {
        s.crypto_aead_chacha20poly1305_ietf_decrypt_detached(m, null, c, mac, ad, nonce, k)
      } catch {
        throw new Error('Noise: a message failed its ChaCha20-Poly1305 check')
      }
      return m
    }
  }
}

/** The same message sealed by both: true when libsodium gives node:crypto's bytes and opens them. */
function agrees (aead: ReturnType<typeof sodiumAead>): boolean {
  const k = Uint8Array.from({ length: 32 }, (_, i) => (i * 29 + 3) & 0xff)
  const nonce = Uint8Array.from({ length: 12 }, (_, i) => 250 - i)
  const ad = Uint8Array.from({ length: 7 }, (_, i) => i)
  const msg = Uint8Array.from({ length: 1500 }, (_, i) => (i * 7) & 0xff)
  const theirs = defaultCrypto.chaCha20Poly1305Encrypt(msg, nonce, ad, k).subarray()
  const ours = aead.chaCha20Poly1305Encrypt(msg, nonce, ad, k).subarray()
  if (theirs.byteLength !== ours.byteLength || !theirs.every((b, i) => b === ours[i])) return false
  const back = aead.chaCha20Poly1305Decrypt(Uint8Array.from(theirs), nonce, ad, k).subarray()
  return back.every((b, i) => b === msg[i])
}

let native: ReturnType<typeof sodiumAead> | null | undefined

/** libsodium's AEAD, or null where the add-on does not load or disagrees with node:crypto. */
export function nativeNoiseAead (): ReturnType<typeof sodiumAead> | null {
  if (native !== undefined) return native
  native = null
  try {
    const s = sodiumNative()
    if (s === null || typeof s.crypto_aead_chacha20poly1305_ietf_encrypt_detached !== 'function') return null
    const aead = sodiumAead(s)
    if (agrees(aead)) native = aead
  } catch {
    native = null
  }
  return native
}

/**
 * The crypto handed to Noise: the library's default with its AEAD on libsodium where that loads,
 * large messages on whichever of libsodium and node:crypto measured faster (`auto`). `auto`
 * honours RBTNODE_NOISE_CIPHER (`node`, `native`); `native` (libsodium for every message) where it
 * does not load throws.
 */
export function noiseCrypto (choice: NoiseCipherChoice = 'auto'): ICryptoInterface & { readonly aead: 'native' | 'node' } {
  const env = process.env.RBTNODE_NOISE_CIPHER
  if (choice === 'auto' && (env === 'node' || env === 'native')) choice = env
  if (choice === 'node') return { ...defaultCrypto, aead: 'node' }
  const aead = nativeNoiseAead()
  if (aead === null) {
    if (choice === 'native') throw new Error('the native ChaCha20-Poly1305 (sodium-native) does not load on this platform')
    return { ...defaultCrypto, aead: 'node' }
  }
  if (choice === 'native') return { ...defaultCrypto, ...aead, aead: 'native' }
  const both = fasterAead(aead)
  return { ...defaultCrypto, chaCha20Poly1305Encrypt: both.chaCha20Poly1305Encrypt, chaCha20Poly1305Decrypt: both.chaCha20Poly1305Decrypt, aead: 'native' }
}
