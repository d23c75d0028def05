/**
 * The private-network connection protector (libp2p pnet, PSK v1), on XSalsa20: libsodium's Salsa20
 * core where the `sodium-native` add-on loads, @noble/ciphers' JavaScript otherwise (salsa20-core.ts).
 *
 * On the wire it is the protocol of libp2p's `@libp2p/pnet` and of go-libp2p's pnet: as soon as
 * the raw connection is open each side writes 24 random bytes (its nonce), then every byte it
 * writes is XORed with one continuous XSalsa20 keystream made from the 32-byte swarm key and its
 * own nonce, from block 0 on. Each side decrypts what it reads with the keystream of the other
 * side's nonce. Nothing else is exchanged: a peer with another swarm key reads garbage, and the
 * Noise handshake that follows fails.
 *
 * Why not `@libp2p/pnet`: its cipher module keeps one WebAssembly memory for the whole process,
 * takes 64 bytes of it per cipher for good and grows it from each cipher's own (often stale) view
 * of its size, so churn and large chunks ended in "WebAssembly.Memory.grow(): Maximum memory size
 * exceeded" thrown inside a socket's data event, which killed the process. Here each direction of
 * a connection holds a key, a nonce and one 64-byte keystream block, and each chunk gets an output
 * buffer of its own size that nothing keeps; nothing is shared between connections.
 *
 * Errors never leave an event listener: a failure while decrypting or encrypting aborts that
 * connection (its socket is reset) and is logged; other connections carry on.
 */
import { randomFillSync } from 'node:crypto'
import { hsalsa } from '@noble/ciphers/salsa.js'
import { AbstractMultiaddrConnection, byteStream } from '@libp2p/utils'
import type { AbortOptions, ConnectionProtector, Logger, MessageStream, MultiaddrConnection, StreamCloseEvent, StreamMessageEvent } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import { deadline } from './deadline.js'
import type { SwarmKey } from './swarm-key.js'
import { salsa20Core, type Salsa20Choice, type Salsa20Core } from './salsa20-core.js'

export const PNET_NONCE_BYTES = 24
export const PNET_KEY_BYTES = 32
const BLOCK_BYTES = 64
/**
 * Keystream blocks one direction may use. Noble takes a 32-bit block counter and refuses the last
 * value, so a direction ends after (2^32 - 1) * 64 bytes, about 256 GiB; the connection is then
 * aborted (the peers reconnect with fresh nonces). The reference ciphers carry into a 64-bit
 * counter, which no connection of ours comes near.
 */
const MAX_BLOCKS = 2 ** 32 - 1
const ZERO_BLOCK = new Uint8Array(BLOCK_BYTES)
/** Salsa20's constant for 32-byte keys, "expand 32-byte k", as little-endian words. */
const SIGMA = new Uint32Array([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574])

/** How long `protect` waits for the remote nonce by default. */
export const DEFAULT_NONCE_TIMEOUT_MS = 5_000

/** Something went wrong in the private-network layer of one connection. */
export class PnetError extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'PnetError'
  }
}

/**
 * One direction's XSalsa20 keystream. `xor` and `apply` take chunks of any size: the unused rest
 * of a keystream block is kept for the next chunk, so the output is the same as one pass over all
 * the bytes at once. The Salsa20 core (native or JavaScript) is called with the block counter to
 * start from, so nothing but that counter and the one partly used block is carried between chunks.
 */
export class XSalsa20Keystream {
  private readonly key: Uint8Array
  private readonly nonce: Uint8Array
  /** Index of the next keystream block not generated yet. */
  private block = 0
  /** The last generated block when only part of it was used; `rest` bytes of it remain. */
  private readonly spare = new Uint8Array(BLOCK_BYTES)
  private rest = 0
  private readonly core: Salsa20Core

  constructor (key: Uint8Array, nonce: Uint8Array, core: Salsa20Core = salsa20Core()) {
    this.core = core
    if (key.byteLength !== PNET_KEY_BYTES) throw new PnetError(`pnet key must be ${PNET_KEY_BYTES} bytes, got ${key.byteLength}`)
    if (nonce.byteLength !== PNET_NONCE_BYTES) throw new PnetError(`pnet nonce must be ${PNET_NONCE_BYTES} bytes, got ${nonce.byteLength}`)
    // XSalsa20 is Salsa20 under a subkey derived from the key and the nonce's first 16 bytes,
    // with the nonce's last 8: derived once here, not again for every chunk (that derivation was
    // a fifth of the cipher's CPU, chunks being small)
    const sub = new Uint32Array(8)
    hsalsa(SIGMA, new Uint32Array(Uint8Array.from(key).buffer), new Uint32Array(Uint8Array.from(nonce.subarray(0, 16)).buffer), sub)
    this.key = new Uint8Array(sub.buffer)
    this.nonce = Uint8Array.from(nonce.subarray(16))
  }

  /** Which Salsa20 core runs this keystream. */
  get coreName (): 'native' | 'js' {
    return this.core.name
  }

  /** Bytes of keystream used so far. */
  get position (): number {
    return this.block * BLOCK_BYTES - this.rest
  }

  /** XORs `buf` in place with the next `buf.byteLength` keystream bytes. */
  xor (buf: Uint8Array): void {
    this.run(buf, buf)
  }

  /**
   * Returns a new buffer holding `chunks` (`length` bytes in all) XORed with the keystream. It is
   * placed so that the keystream's block boundaries fall on 4-byte boundaries, which lets the
   * cipher work a word at a time.
   */
  apply (chunks: Uint8Array | Iterable<Uint8Array>, length: number): Uint8Array {
    // every byte is written below, so the memory need not be zeroed first
    let out: Uint8Array
    if (this.core.wantsAlignment) {
      const mem = Buffer.allocUnsafeSlow(length + 3)
      const lead = Math.min(this.rest, length)
      const pad = (4 - (mem.byteOffset + lead) % 4) % 4
      out = new Uint8Array(mem.buffer, mem.byteOffset + pad, length)
    } else {
      out = Buffer.allocUnsafe(length)
    }
    if (chunks instanceof Uint8Array) {
      this.run(chunks, out)
    } else {
      let at = 0
      for (const c of chunks) {
        this.run(c, out.subarray(at, at + c.byteLength))
        at += c.byteLength
      }
      if (at !== length) throw new PnetError(`pnet: chunks hold ${at} bytes, expected ${length}`)
    }
    return out
  }

  /** Writes `src` XORed with the next `src.byteLength` keystream bytes to `dst` (the same buffer or one that does not overlap it). */
  private run (src: Uint8Array, dst: Uint8Array): void {
    const n = src.byteLength
    let i = 0
    if (this.rest > 0) {
      let k = BLOCK_BYTES - this.rest
      const take = Math.min(this.rest, n)
      for (; i < take; i++, k++) dst[i] = src[i] ^ this.spare[k]
      this.rest -= take
    }
    const whole = n - i - (n - i) % BLOCK_BYTES
    if (whole > 0) {
      const blocks = whole / BLOCK_BYTES
      this.reserve(blocks)
      const to = dst.subarray(i, i + whole)
      let from = src.subarray(i, i + whole)
      // the cipher goes word by word only when input and output are both aligned
      if (this.core.wantsAlignment && from.buffer !== to.buffer && from.byteOffset % 4 !== 0) {
        to.set(from)
        from = to
      }
      this.core.xor(this.key, this.nonce, from, to, this.block)
      this.block += blocks
      i += whole
    }
    if (i < n) {
      this.reserve(1)
      this.core.xor(this.key, this.nonce, ZERO_BLOCK, this.spare, this.block)
      this.block += 1
      let k = 0
      for (; i < n; i++, k++) dst[i] = src[i] ^ this.spare[k]
      this.rest = BLOCK_BYTES - k
    }
  }

  private reserve (blocks: number): void {
    if (this.block + blocks > MAX_BLOCKS) throw new PnetError('pnet keystream exhausted (about 256 GiB in one direction); the connection must be reopened')
  }
}

/** What the base class hands to `sendData` (its own copy of uint8arraylist's list type). */
type Outgoing = Parameters<AbstractMultiaddrConnection['sendData']>[0]

interface PnetConnectionInit {
  maConn: MessageStream
  remoteAddr: Multiaddr
  key: Uint8Array
  localNonce: Uint8Array
  remoteNonce: Uint8Array
  core: Salsa20Core
  log: Logger
}

/**
 * The protected connection handed to the upgrader: plaintext above, the keystreams' output on
 * `maConn` below. Shaped like @libp2p/pnet's own wrapper so the layers above see no difference.
 */
class PnetConnection extends AbstractMultiaddrConnection {
  private readonly maConn: MessageStream
  private readonly inbound: XSalsa20Keystream
  private readonly outbound: XSalsa20Keystream

  constructor (init: PnetConnectionInit) {
    super({ log: init.log, remoteAddr: init.remoteAddr, direction: init.maConn.direction })
    this.maConn = init.maConn
    this.inbound = new XSalsa20Keystream(init.key, init.remoteNonce, init.core)
    this.outbound = new XSalsa20Keystream(init.key, init.localNonce, init.core)
    // A chunk read from the socket belongs to this layer alone: the native core decrypts it where
    // it lies instead of into a copy (the JavaScript core wants the aligned copy `apply` makes).
    const inPlace = !init.core.wantsAlignment

    this.maConn.addEventListener('message', (evt: StreamMessageEvent) => {
      // Runs inside the socket's data event: nothing may escape from here.
      try {
        if (this.readStatus === 'closed') return
        const data = evt.data
        if (inPlace && data instanceof Uint8Array) {
          this.inbound.xor(data)
          this.onData(data)
        } else {
          this.onData(this.inbound.apply(data, data.byteLength))
        }
      } catch (err) {
        this.fail(err, 'decrypting')
      }
    })
    this.maConn.addEventListener('drain', () => {
      this.onMuxerDrain()
    })
    this.maConn.addEventListener('close', (evt: StreamCloseEvent) => {
      try {
        if (evt.error != null) {
          if (evt.local === true) this.abort(evt.error)
          else this.onRemoteReset()
        } else {
          this.onTransportClosed()
        }
      } catch (err) {
        this.log.error('pnet: closing after the transport closed threw - %e', err)
      }
    })
  }

  /** Aborts this connection (and its socket) after an error in our own layer. */
  private fail (err: unknown, doing: string): void {
    const e = err instanceof Error ? err : new PnetError(String(err))
    this.log.error('pnet: %s failed, aborting the connection - %e', doing, e)
    try {
      this.abort(e)
    } catch (abortErr) {
      this.log.error('pnet: abort threw - %e', abortErr)
      try { this.maConn.abort(e) } catch {}
    }
  }

  sendData (data: Outgoing): { sentBytes: number, canSendMore: boolean } {
    try {
      const out = this.outbound.apply(data, data.byteLength)
      return { sentBytes: data.byteLength, canSendMore: this.maConn.send(out) }
    } catch (err) {
      // Abort once the send queue has unwound; throwing here would reach whichever layer called
      // send(), possibly an event listener.
      queueMicrotask(() => { this.fail(err, 'encrypting or sending') })
      return { sentBytes: data.byteLength, canSendMore: false }
    }
  }

  async sendClose (options?: AbortOptions): Promise<void> {
    await this.maConn.close(options)
  }

  sendReset (err: Error): void {
    this.maConn.abort(err)
  }

  sendPause (): void {
    if (this.maConn.status === 'open') this.maConn.pause()
  }

  sendResume (): void {
    if (this.maConn.status === 'open') this.maConn.resume()
  }
}

export interface PnetProtectorInit {
  /** The swarm key (its 32 raw bytes are the cipher key). */
  swarmKey: Pick<SwarmKey, 'key'>
  /**
   * Longest wait for the remote nonce, in ms (default 5 s). The caller's signal, when given,
   * can end the wait sooner.
   */
  nonceTimeoutMs?: number
  /**
   * The Salsa20 core: `auto` (default) takes libsodium's where it loads, else the JavaScript one;
   * `js` and `native` force one (tests and benchmarks).
   */
  cipher?: Salsa20Choice
}

class PnetProtector implements ConnectionProtector {
  readonly [Symbol.toStringTag] = 'rbtnode/pnet'
  private readonly key: Uint8Array
  private readonly timeoutMs: number
  private readonly core: Salsa20Core

  constructor (init: PnetProtectorInit) {
    this.core = salsa20Core(init.cipher)
    if (init.swarmKey.key.byteLength !== PNET_KEY_BYTES) throw new PnetError(`swarm key must be ${PNET_KEY_BYTES} bytes, got ${init.swarmKey.key.byteLength}`)
    this.key = Uint8Array.from(init.swarmKey.key)
    this.timeoutMs = init.nonceTimeoutMs ?? DEFAULT_NONCE_TIMEOUT_MS
  }

  async protect (connection: MessageStream, options?: AbortOptions): Promise<MessageStream> {
    if (connection == null) throw new PnetError('no connection to protect')
    const remoteAddr = (connection as Partial<MultiaddrConnection>).remoteAddr
    if (remoteAddr == null) throw new PnetError('pnet protects multiaddr connections only (no remoteAddr)')
    const log = connection.log.newScope('pnet')
    log('protecting the connection')
    const localNonce = randomFillSync(new Uint8Array(PNET_NONCE_BYTES))
    const wait = deadline(this.timeoutMs, options?.signal)
    const bytes = byteStream(connection)
    let remoteNonce: Uint8Array
    try {
      const [read] = await Promise.all([
        bytes.read({ ...options, bytes: PNET_NONCE_BYTES, signal: wait.signal }),
        bytes.write(localNonce, { ...options, signal: wait.signal })
      ])
      remoteNonce = read.subarray()
    } catch (err) {
      const e = wait.timedOut()
        ? new PnetError(`no pnet nonce from the remote within ${this.timeoutMs} ms`, { cause: err })
        : new PnetError(`pnet nonce exchange failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
      log.error('%s', e.message)
      connection.abort(e)
      throw e
    } finally {
      wait.clear()
    }
    log('exchanged nonces (%s Salsa20 core)', this.core.name)
    return new PnetConnection({ maConn: bytes.unwrap(), remoteAddr, key: this.key, localNonce, remoteNonce, core: this.core, log })
  }
}

/**
 * A libp2p `connectionProtector` factory for a private network with `swarmKey`, wire-compatible
 * with `preSharedKey` from @libp2p/pnet and with go-libp2p's pnet.
 */
export function pnetProtector (init: PnetProtectorInit): () => ConnectionProtector {
  const protector = new PnetProtector(init)
  return () => protector
}
