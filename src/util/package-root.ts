import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ErrorCode, RbtError } from './errors.js'

let packageRoot: string | undefined
/**
 * The directory holding this package's package.json (with swarm-keys/ beside it), found by walking
 * up from this module: the same answer from the compiled tree (dist/src/util) and from the bundle
 * (dist/bundle), whatever depth the file holding this code has.
 */
export function findPackageRoot (): string {
  if (packageRoot !== undefined) return packageRoot
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'swarm-keys'))) {
      packageRoot = dir
      return dir
    }
    const parent = dirname(dir)
    if (parent === dir) throw new RbtError(ErrorCode.CONFIG, 'cannot locate the package root (package.json with swarm-keys/)')
    dir = parent
  }
}
