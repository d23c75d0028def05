import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A small tmpfs of its own, to give a store a real disk that fills up. Mounting needs root:
 * suites call `requireTmpfs(this)` in `before`, which skips them (saying why) otherwise.
 */
export class Tmpfs {
  private filler: string | undefined
  private constructor (readonly dir: string) {}

  static mount (sizeMb: number): Tmpfs {
    const dir = mkdtempSync(join(tmpdir(), 'rbtnode-tmpfs-'))
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir])
    return new Tmpfs(dir)
  }

  /** Writes a file until the disk refuses more (ENOSPC). */
  fill (): void {
    const path = join(this.dir, `.filler-${Date.now()}`)
    const fd = openSync(path, 'w')
    const chunk = Buffer.alloc(1 << 16, 0x41)
    try {
      for (;;) writeSync(fd, chunk)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e
    } finally {
      closeSync(fd)
    }
    // whatever smaller space is left goes too
    const fd2 = openSync(path, 'a')
    try { for (;;) writeSync(fd2, Buffer.alloc(512)) } catch {} finally { closeSync(fd2) }
    this.filler = path
  }

  /** Frees what `fill` took. */
  free (): void {
    if (this.filler !== undefined) rmSync(this.filler, { force: true })
    this.filler = undefined
  }

  /** Makes the file system read-only (writes fail with EROFS) or writable again. */
  readOnly (on: boolean): void {
    execFileSync('mount', ['-o', `remount,${on ? 'ro' : 'rw'}`, this.dir])
  }

  dispose (): void {
    try { execFileSync('umount', ['-l', this.dir]) } catch {}
    rmSync(this.dir, { recursive: true, force: true })
  }
}

export const canMount = (): boolean => process.getuid?.() === 0

/** Skips the suite, with the reason, where a tmpfs cannot be mounted (not root); fails instead when `CI` is set. */
export function requireTmpfs (ctx: Mocha.Context): void {
  if (!canMount() && process.env.CI !== undefined) throw new Error('mounting a tmpfs needs root, and CI runs as root: the full-disk tests must run here')
  if (!canMount()) {
    console.log('      (skipped: mounting a tmpfs to fill a real disk needs root; CI runs as root)')
    ctx.skip()
  }
}
