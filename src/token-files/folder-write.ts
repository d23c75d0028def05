/**
 * Writes a content-addressed folder all at once: the files go into a temporary folder next to the
 * target, each synced, which is then renamed into place and the parent synced (util/durable-write). A concurrent writer of the same id may win the rename;
 * that is fine when `complete()` then sees the folder. A moved file that did not make it into place
 * is removed with the temporary folder.
 */
import { mkdir, rename, rm } from 'node:fs/promises'
import { syncDir, writeNewFileSynced } from '../util/durable-write.js'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'

/** A file moved into the folder (already synced, on the same disk as `parent`) rather than written. */
export interface MovedFile { moveFrom: string }

export async function writeFolderAtomically (parent: string, target: string, files: Array<[name: string, data: string | Uint8Array | MovedFile]>, complete: () => Promise<boolean>): Promise<void> {
  const tmp = join(parent, `.tmp-${randomBytes(6).toString('hex')}`)
  await mkdir(tmp, { recursive: true })
  try {
    for (const [name, data] of files) {
      if (typeof data === 'object' && 'moveFrom' in data) await rename(data.moveFrom, join(tmp, name))
      else await writeNewFileSynced(join(tmp, name), data)
    }
    await syncDir(tmp)
    await rename(tmp, target).catch(async (e) => { if (!await complete()) throw e })
    await syncDir(parent)
  } finally {
    await rm(tmp, { recursive: true, force: true })
  }
}
