/**
 * What an operator watches to tell a node that keeps running from one that keeps growing: the V8
 * heap in use right after the last full garbage collection (the heap the node really holds, not
 * what garbage has piled up since), and the bytes of the data directory (docs/operations.md,
 * "Memory and disk over time").
 */
import { PerformanceObserver, constants } from 'node:perf_hooks'
import { getHeapStatistics } from 'node:v8'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * The heap in use after the last major (mark-sweep-compact) collection of this thread, observed on
 * the `gc` performance entries. A process started with `node --expose-gc` (the long-run bench's
 * nodes) is collected on demand instead: `read()` runs a full collection first, so the figure is
 * exact at the moment it is asked for.
 */
export class HeapAfterGc {
  private last: number | undefined
  private observer: PerformanceObserver | undefined

  constructor (private readonly forceGc: (() => void) | undefined = exposedGc()) {}

  start (): void {
    if (this.observer !== undefined) return
    this.observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const kind = (e as { detail?: { kind?: number } }).detail?.kind
        if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) this.last = getHeapStatistics().used_heap_size
      }
    })
    this.observer.observe({ entryTypes: ['gc'] })
  }

  stop (): void {
    this.observer?.disconnect()
    this.observer = undefined
  }

  /** Bytes in use after the last full collection; undefined before the first one. */
  read (): number | undefined {
    if (this.forceGc !== undefined) {
      this.forceGc()
      this.last = getHeapStatistics().used_heap_size
    }
    return this.last
  }
}

/** `global.gc` when the process was started with `--expose-gc`. */
function exposedGc (): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc
  return typeof gc === 'function' ? () => { (gc as () => void)() } : undefined
}

/** Bytes of every file under `dir` (apparent sizes; a file that vanished while walking counts 0). */
export async function directoryBytes (dir: string): Promise<number> {
  let total = 0
  let entries
  try { entries = await readdir(dir, { withFileTypes: true }) } catch { return 0 }
  for (const e of entries) {
    const p = join(dir, e.name)
    if (e.isDirectory()) total += await directoryBytes(p)
    else if (e.isFile()) {
      try { total += (await stat(p)).size } catch { /* removed meanwhile (a compacted table, a temp file) */ }
    }
  }
  return total
}

/**
 * The data directory's size, walked in the background at most once per `everyMs` (a scrape reads
 * the last figure and, when it is older than that, starts a new walk without waiting for it):
 * never a walk per scrape, never on the path of a transfer.
 */
export class DirectorySize {
  private bytes: number | undefined
  private at = -Infinity
  private walking: Promise<void> | undefined

  constructor (private readonly dir: string, private readonly everyMs: number, private readonly now: () => number = Date.now) {}

  /** The last figure (undefined before the first walk ended); starts a walk when it is stale. */
  read (): number | undefined {
    if (this.walking === undefined && this.now() - this.at >= this.everyMs) void this.refresh()
    return this.bytes
  }

  /** Walks the directory now (a walk already under way is joined). */
  async refresh (): Promise<number> {
    this.walking ??= directoryBytes(this.dir).then((b) => { this.bytes = b; this.at = this.now() }).finally(() => { this.walking = undefined })
    await this.walking
    return this.bytes ?? 0
  }
}
