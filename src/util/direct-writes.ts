/**
 * Writes into a file that go around the page cache where the platform allows it (Linux's
 * O_DIRECT), for bulk bytes written once and not read back soon (a fetched artifact): the kernel
 * then copies nothing into cache pages it must first find and zero, which on a virtual machine
 * whose memory the host hands back lazily cost several times the write itself (decision 0031).
 *
 * O_DIRECT needs the buffer's address, the length and the file offset aligned to the device's
 * block (4 KiB covers every usual one). JavaScript cannot place a buffer at an address, so the
 * bytes are copied into slots of a WebAssembly memory, which V8 maps whole pages at a time: every
 * slot starts on a page. Anything that cannot go that way (a tail that is not whole pages, no free
 * slot, a platform or file system without O_DIRECT, a write the kernel refuses as unaligned) is
 * written through the ordinary handle instead, so a write is always made, one way or the other.
 * Durability is the caller's, as before: a datasync of the ordinary handle covers both kinds of
 * write (it flushes the file's data and the device's cache).
 */
import { constants } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'

/** The alignment asked of address, length and offset. */
export const DIRECT_ALIGN = 4096
const WASM_PAGE = 65536

/** Writes all of `data` at `position`, however many writes the kernel takes for it. */
async function writeFully (fh: FileHandle, data: Uint8Array, position: number): Promise<void> {
  let at = 0
  while (at < data.length) {
    const { bytesWritten } = await fh.write(data, at, data.length - at, position + at)
    if (bytesWritten <= 0) throw Object.assign(new Error('a write wrote nothing'), { code: 'EIO' })
    at += bytesWritten
  }
}

export interface DirectWritesOptions {
  /** the largest write taken the direct way, bytes (a multiple of DIRECT_ALIGN) */
  slotBytes: number
  /** direct writes in flight at once; more go through the ordinary handle */
  slots: number
  /** tests: never open the file with O_DIRECT (the ordinary path alone) */
  disabled?: boolean
}

export class DirectWrites {
  /** writes made the direct way, and through the ordinary handle */
  direct = 0
  buffered = 0
  private readonly free: Uint8Array[]
  /** the direct handle, kept to be closed once direct writes stopped (others may still be running on it) */
  private readonly opened: FileHandle | undefined

  private constructor (
    private readonly fallback: FileHandle,
    private dfh: FileHandle | undefined,
    slots: Uint8Array[]
  ) { this.free = slots; this.opened = dfh }

  /**
   * Opens `path` (which exists) for direct writes beside `fallback`, its ordinary handle. Never
   * fails for want of O_DIRECT: the writer then uses `fallback` alone.
   */
  static async open (path: string, fallback: FileHandle, o: DirectWritesOptions): Promise<DirectWrites> {
    const flag = (constants as { O_DIRECT?: number }).O_DIRECT
    if (o.disabled === true || flag === undefined || o.slots <= 0 || o.slotBytes <= 0 || o.slotBytes % DIRECT_ALIGN !== 0) return new DirectWrites(fallback, undefined, [])
    let slots: Uint8Array[]
    try {
      const mem = new WebAssembly.Memory({ initial: Math.ceil((o.slotBytes * o.slots) / WASM_PAGE) })
      slots = Array.from({ length: o.slots }, (_, i) => new Uint8Array(mem.buffer, i * o.slotBytes, o.slotBytes))
    } catch {
      // no WebAssembly (--jitless), or no address space for it
      return new DirectWrites(fallback, undefined, [])
    }
    const dfh = await open(path, constants.O_WRONLY | flag).catch(() => undefined)
    return new DirectWrites(fallback, dfh, dfh === undefined ? [] : slots)
  }

  /** Whether direct writes are still being made (none refused as unaligned yet). */
  get active (): boolean { return this.dfh !== undefined }

  /**
   * Writes `data` at `position`: the direct way when it can, else through the ordinary handle.
   * `release` is called once `data` is no longer read: as soon as it is copied into a slot, or once
   * the ordinary write is done (its buffer can then serve again while the disk writes the copy).
   */
  async write (data: Uint8Array, position: number, release?: () => void): Promise<void> {
    let released = false
    const done = (): void => { if (!released) { released = true; release?.() } }
    try { await this.writeOnce(data, position, done) } finally { done() }
  }

  private async writeOnce (data: Uint8Array, position: number, copied: () => void): Promise<void> {
    const slot = this.dfh !== undefined && data.length > 0 && data.length % DIRECT_ALIGN === 0 && position % DIRECT_ALIGN === 0 && data.length <= (this.free[0]?.length ?? 0)
      ? this.free.pop()
      : undefined
    if (slot !== undefined) {
      const dfh = this.dfh!
      try {
        slot.set(data)
        copied()
        await writeFully(dfh, slot.subarray(0, data.length), position)
        this.direct++
        return
      } catch (e) {
        // refused as unaligned (a device block larger than 4 KiB, a file system that takes the
        // flag and not the write): the ordinary way from now on. Any other error is the disk's
        if ((e as { code?: string }).code !== 'EINVAL') throw e
        this.dfh = undefined
        // the caller's buffer may serve another block by now: the ordinary write takes the copy
        data = Uint8Array.from(slot.subarray(0, data.length))
      } finally {
        this.free.push(slot)
      }
    }
    await writeFully(this.fallback, data, position)
    this.buffered++
  }

  /** Closes the direct handle once the writes made are done (the ordinary one stays the caller's). */
  async close (): Promise<void> {
    this.dfh = undefined
    await this.opened?.close().catch(() => {})
  }
}
