/**
 * A full garbage collection on request, for code that moves large amounts of bytes through
 * short-lived buffers (an NFT artifact's blocks). Such buffers are mostly memory outside the
 * JavaScript heap, behind tiny objects: the heap hardly grows, so V8 collects them only once that
 * outside memory has grown by its own threshold (about 64 MiB), and the process's resident memory
 * rises by that much whatever the transfer's own needs. Collecting every few tens of MiB moved
 * keeps it near what is in use. The collector is reached through V8's `expose-gc` flag, set once
 * on first use; where that fails, `releaseMemory` does nothing.
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

/** How much moved between two collections: 4 MiB (a collection of the node's heap takes about 10 ms). */
export const RELEASE_EVERY_BYTES = 4 * 1024 * 1024

/** Calls releaseMemory once every `bytes` counted. */
export class MemoryReleaser {
  private count = 0
  constructor (private readonly bytes: number) {}
  add (n: number): void {
    this.count += n
    if (this.count >= this.bytes) { this.count = 0; releaseMemory() }
  }
}
