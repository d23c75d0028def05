/**
 * The Salsa20 core the private-network cipher runs on: libsodium's, through the `sodium-native`
 * add-on (prebuilt binaries inside the package, no install step), when it loads on this platform;
 * otherwise @noble/ciphers' JavaScript. Both produce the same keystream (see
 * docs/decisions/0023-wire-speed.md for the figures behind the choice).
 *
 * `RBTNODE_PNET_CIPHER=js` in the environment keeps a process on the JavaScript core.
 */
import { salsa20 } from '@noble/ciphers/salsa.js'
import { sodiumBinding, sodiumNative, type SodiumBinding } from '../util/sodium-native.js'

/**
 * Writes `src` XORed with the Salsa20 keystream of (`key`, `nonce`) from block `counter` on into
 * `dst` (the same length; the same buffer or one that does not overlap it).
 */
export type Salsa20Xor = (key: Uint8Array, nonce: Uint8Array, src: Uint8Array, dst: Uint8Array, counter: number) => void

export interface Salsa20Core {
  readonly name: 'native' | 'js'
  readonly xor: Salsa20Xor
  /** True when the core is faster with 4-byte aligned input and output (the JavaScript one). */
  readonly wantsAlignment: boolean
}

export const jsSalsa20: Salsa20Core = {
  name: 'js',
  wantsAlignment: true,
  xor: (key, nonce, src, dst, counter) => { salsa20(key, nonce, src, dst, counter) }
}

let native: Salsa20Core | null | undefined

/** libsodium's core, or null where the add-on does not load (no prebuilt binary for the platform). */
export function nativeSalsa20 (): Salsa20Core | null {
  if (native !== undefined) return native
  native = null
  try {
    const mod = sodiumNative()
    if (mod === null || typeof mod.crypto_stream_salsa20_xor_ic !== 'function') return null
    // the raw binding, past the package's argument checks (the callers here check their sizes)
    const raw = sodiumBinding()
    const binding: SodiumBinding = typeof raw?.crypto_stream_salsa20_xor_ic === 'function'
      ? raw
      : { crypto_stream_salsa20_xor_ic: (c, m, n, ic, k) => { mod.crypto_stream_salsa20_xor_ic(c, m, n, ic, k); return 0 } }
    const fn = binding.crypto_stream_salsa20_xor_ic
    const core: Salsa20Core = {
      name: 'native',
      wantsAlignment: false,
      xor: (key, nonce, src, dst, counter) => {
        const rc = fn(dst, src, nonce, counter, key)
        if (rc !== 0) throw new Error(`libsodium salsa20 failed (${String(rc)})`)
      }
    }
    // a known answer before it is trusted: the JavaScript core's first two blocks for one key
    const key = new Uint8Array(32).map((_, i) => i * 7 + 1)
    const nonce = new Uint8Array(8).map((_, i) => 200 - i)
    const src = new Uint8Array(128).map((_, i) => i)
    const a = new Uint8Array(128)
    const b = new Uint8Array(128)
    jsSalsa20.xor(key, nonce, src, a, 3)
    core.xor(key, nonce, src, b, 3)
    if (!a.every((v, i) => v === b[i])) return null
    native = core
  } catch {
    native = null
  }
  return native
}

/** Which core to use: `auto` (the native one where it loads), or one named. */
export type Salsa20Choice = 'auto' | 'native' | 'js'

/** The core for `choice`; `auto` honours RBTNODE_PNET_CIPHER=js. `native` where it does not load throws. */
export function salsa20Core (choice: Salsa20Choice = 'auto'): Salsa20Core {
  if (choice === 'js') return jsSalsa20
  if (choice === 'auto' && process.env.RBTNODE_PNET_CIPHER === 'js') return jsSalsa20
  const n = nativeSalsa20()
  if (n !== null) return n
  if (choice === 'native') throw new Error('the native Salsa20 core (sodium-native) does not load on this platform')
  return jsSalsa20
}
