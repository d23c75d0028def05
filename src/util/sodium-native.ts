/**
 * libsodium through the optional `sodium-native` add-on (prebuilt binaries inside the package, no
 * install step), loaded once per process; null where it does not load (a platform without a
 * prebuilt binary, another runtime). Callers keep a fallback of their own and check the native
 * answer against it once before trusting it (docs/decisions/0023-wire-speed.md, 0030).
 */
import { createRequire } from 'node:module'

/** The calls of the package this node makes (the package's own wrappers: they check sizes). */
export interface SodiumNative {
  crypto_stream_salsa20_xor_ic: (c: Uint8Array, m: Uint8Array, n: Uint8Array, ic: number, k: Uint8Array) => void
  crypto_sign_detached: (sig: Uint8Array, m: Uint8Array, sk: Uint8Array) => void
  crypto_sign_verify_detached: (sig: Uint8Array, m: Uint8Array, pk: Uint8Array) => boolean
  /** Throws when it cannot seal. */
  crypto_aead_chacha20poly1305_ietf_encrypt_detached: (c: Uint8Array, mac: Uint8Array, m: Uint8Array, ad: Uint8Array | null, nsec: null, npub: Uint8Array, k: Uint8Array) => number
  /** Throws when the tag does not match. */
  crypto_aead_chacha20poly1305_ietf_decrypt_detached: (m: Uint8Array, nsec: null, c: Uint8Array, mac: Uint8Array, ad: Uint8Array | null, npub: Uint8Array, k: Uint8Array) => void
}

/** The add-on's raw binding, past the package's argument checks (for callers that check sizes themselves). */
export interface SodiumBinding {
  crypto_stream_salsa20_xor_ic: (c: Uint8Array, m: Uint8Array, n: Uint8Array, ic: number, k: Uint8Array) => number
}

let loaded: { mod: SodiumNative, binding: SodiumBinding | undefined } | null | undefined

function load (): { mod: SodiumNative, binding: SodiumBinding | undefined } | null {
  if (loaded !== undefined) return loaded
  loaded = null
  try {
    const require = createRequire(import.meta.url)
    const mod = require('sodium-native') as SodiumNative
    let binding: SodiumBinding | undefined
    try { binding = require('sodium-native/binding') as SodiumBinding } catch {}
    loaded = { mod, binding }
  } catch {
    loaded = null
  }
  return loaded
}

/** The package, or null where it does not load. */
export function sodiumNative (): SodiumNative | null { return load()?.mod ?? null }

/** The package's raw binding, or undefined (the package itself may still load). */
export function sodiumBinding (): SodiumBinding | undefined { return load()?.binding }
