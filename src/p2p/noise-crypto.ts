/**
 * The ChaCha20-Poly1305 that Noise seals every transport message with, on libsodium through the
 * optional `sodium-native` add-on when it loads (and gives the same bytes as node:crypto on a
 * known message), otherwise the Noise library's own (OpenSSL through node:crypto for messages of
 * 1,200 bytes and more, WebAssembly below). Same AEAD (RFC 8439), same bytes on the wire: a peer on
 * one talks to a peer on the other.
 *
 * Why: OpenSSL's binding creates a cipher object per message and returns fresh buffers (the
 * ciphertext, the tag, their join); libsodium seals into one buffer and opens in place, and its
 * core is faster here (docs/decisions/0031-noise-on-libsodium.md has the figures).
 *
 * `RBTNODE_NOISE_CIPHER=node` in the environment keeps a process on the library's default.
 */
import { defaultCrypto } from '@chainsafe/libp2p-noise/crypto'
import type { ICryptoInterface } from '@chainsafe/libp2p-noise'
import { joinPieces } from '../util/pieces.js'
import { sodiumNative, type SodiumNative } from '../util/sodium-native.js'

const TAG_BYTES = 16

export type NoiseCipherChoice = 'auto' | 'native' | 'node'

/** True when `a` and `b` share memory without starting at the same byte (in-place needs the same start). */
function overlapsShifted (a: Uint8Array, b: Uint8Array): boolean {
  if (a.buffer !== b.buffer || a.byteOffset === b.byteOffset) return false
  return a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength
}

function sodiumAead (s: SodiumNative): Pick<ICryptoInterface, 'chaCha20Poly1305Encrypt' | 'chaCha20Poly1305Decrypt'> {
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
 * The crypto handed to Noise: the library's default with its AEAD on libsodium where that loads.
 * `auto` honours RBTNODE_NOISE_CIPHER=node; `native` where it does not load throws.
 */
export function noiseCrypto (choice: NoiseCipherChoice = 'auto'): ICryptoInterface & { readonly aead: 'native' | 'node' } {
  if (choice === 'node' || (choice === 'auto' && process.env.RBTNODE_NOISE_CIPHER === 'node')) return { ...defaultCrypto, aead: 'node' }
  const aead = nativeNoiseAead()
  if (aead === null) {
    if (choice === 'native') throw new Error('the native ChaCha20-Poly1305 (sodium-native) does not load on this platform')
    return { ...defaultCrypto, aead: 'node' }
  }
  return { ...defaultCrypto, ...aead, aead: 'native' }
}
