/**
 * A full garbage collection on request, for code that moves large amounts of bytes through
 * short-lived buffers (an NFT artifact's blocks). Such buffers are mostly memory outside the
 * JavaScript heap, behind tiny objects: the heap hardly grows, so V8 collects them only once that
 * outside memory has grown by its own threshold (about 64 MiB), and the process's resident memory
 * rises by that much whatever the transfer's own needs. Collecting every few MiB moved keeps it
 * nearer what is in use (NFT artifact fetches, and serving their blocks less often). The collector is
 * reached through V8's `expose-gc` flag, set once on first use; where that fails,
 * `releaseMemory` does nothing.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

let collect: (() => void) | null | undefined

export function releaseMemory (): void {
  if (collect === undefined) {
    try {
      setFlagsFromString('--expose-gc')
      collect = runInNewContext('gc') as () => void
    } catch {
      collect = null
    }
  }
  collect?.()
}

/**
 * How often the memory outside the heap is looked at: every 4 MiB moved. A full collection is
 * not cheap (on a loaded machine, a 256 MiB fetch took 13 s without them and 25 s with one every
 * 16 MiB, 36 s with one every 4 MiB, the fetching node growing by 67, 59 and 50 MiB): this trades
 * speed for a flat memory.
 */
export const RELEASE_EVERY_BYTES = 4 * 1024 * 1024
/** A collection runs when that memory is above this. */
export const RELEASE_ABOVE_BYTES = 16 * 1024 * 1024

/**
 * Counts bytes moved; every `bytes` of them, collects if the memory held outside the heap (buffers)
 * is above `above`.
 */
export class MemoryReleaser {
  private count = 0
  constructor (private readonly bytes: number, private readonly above = RELEASE_ABOVE_BYTES) {}
  add (n: number): void {
    this.count += n
    if (this.count < this.bytes) return
    this.count = 0
    if (process.memoryUsage().external > this.above) releaseMemory()
  }
}
