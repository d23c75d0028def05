/**
 * Durable file writes: the one way the node writes a file. The data goes to a temporary file in the
 * same directory, is synced, renamed over the target and the directory synced, so after a crash or
 * a power loss at any instant the target holds either its old content or the new one, never a
 * prefix or nothing. Leftover temporary files (named `<name>.tmp-…`) are harmless and are
 * overwritten by nothing: `removeLeftovers` clears them.
 */
import { closeSync, fsyncSync, openSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs'
import { open, readdir, rename, rm } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { basename, dirname, join } from 'node:path'
import { ErrorCode, RbtError } from './errors.js'

export interface DurableWriteOptions {
  /** File mode of the new file (default 0o644; secrets 0o600). */
  mode?: number
}

const TMP_MARK = '.tmp-'
const tmpPathOf = (path: string): string => join(dirname(path), `${basename(path)}${TMP_MARK}${process.pid}-${randomBytes(4).toString('hex')}`)

/** Syncs a directory, so a rename or a new entry in it survives a power loss. */
export async function syncDir (dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync().catch((e: NodeJS.ErrnoException) => { if (e.code !== 'EINVAL' && e.code !== 'EISDIR') throw e })
  } finally { await fh.close() }
}

export function syncDirSync (dir: string): void {
  const fd = openSync(dir, 'r')
  try {
    try { fsyncSync(fd) } catch (e) { if ((e as NodeJS.ErrnoException).code !== 'EINVAL' && (e as NodeJS.ErrnoException).code !== 'EISDIR') throw e }
  } finally { closeSync(fd) }
}

/** Writes a new file (it must not exist) and syncs its data; for files inside a folder renamed into place afterwards. */
export async function writeNewFileSynced (path: string, data: string | Uint8Array, opts: DurableWriteOptions = {}): Promise<void> {
  const fh = await open(path, 'wx', opts.mode ?? 0o644)
  try {
    await fh.writeFile(data)
    await fh.sync()
  } finally { await fh.close() }
}

/** Replaces `path` with `data` durably (temp file, sync, rename, directory sync). */
export async function writeFileDurable (path: string, data: string | Uint8Array, opts: DurableWriteOptions = {}): Promise<void> {
  const tmp = tmpPathOf(path)
  try {
    await writeNewFileSynced(tmp, data, opts)
    await rename(tmp, path)
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => {})
    throw e
  }
  await syncDir(dirname(path))
}

/** The synchronous `writeFileDurable`, for start-up paths that are synchronous. */
export function writeFileDurableSync (path: string, data: string | Uint8Array, opts: DurableWriteOptions = {}): void {
  const tmp = tmpPathOf(path)
  try {
    const fd = openSync(tmp, 'wx', opts.mode ?? 0o644)
    try {
      const buf = typeof data === 'string' ? Buffer.from(data) : data
      for (let off = 0; off < buf.length;) off += writeSync(fd, buf, off, buf.length - off)
      fsyncSync(fd)
    } finally { closeSync(fd) }
    renameSync(tmp, path)
  } catch (e) {
    try { rmSync(tmp, { force: true }) } catch {}
    throw e
  }
  syncDirSync(dirname(path))
}

/** Removes temporary files a crash left beside `path` (those of other live processes are not told apart: call at start). */
export async function removeLeftovers (path: string): Promise<number> {
  const prefix = `${basename(path)}${TMP_MARK}`
  let n = 0
  for (const name of await readdir(dirname(path)).catch(() => [] as string[])) {
    if (name.startsWith(prefix)) { await rm(join(dirname(path), name), { force: true }); n++ }
  }
  return n
}

export function removeLeftoversSync (path: string): number {
  const prefix = `${basename(path)}${TMP_MARK}`
  let n = 0
  let names: string[] = []
  try { names = readdirSync(dirname(path)) } catch { return 0 }
  for (const name of names) {
    if (name.startsWith(prefix)) { rmSync(join(dirname(path), name), { force: true }); n++ }
  }
  return n
}

/**
 * The typed error of a file write that failed on the disk: INSUFFICIENT_STORAGE for a full disk,
 * STORAGE_UNAVAILABLE for another I/O error, STORAGE otherwise; the message names `what`, never
 * the file's path (it reaches API answers). Callers log `e` itself for the operator.
 */
export function fileWriteError (what: string, e: unknown): RbtError {
  const code = (e as NodeJS.ErrnoException).code
  if (code === 'ENOSPC' || code === 'EDQUOT') return new RbtError(ErrorCode.INSUFFICIENT_STORAGE, `cannot write ${what}: the disk holding the node's data is full`, { cause: e })
  if (code === 'EIO' || code === 'EROFS') return new RbtError(ErrorCode.STORAGE_UNAVAILABLE, `cannot write ${what}: the node's disk failed the write (${code})`, { cause: e })
  return new RbtError(ErrorCode.STORAGE, `cannot write ${what}${code !== undefined ? ` (${code})` : ''}`, { cause: e })
}
