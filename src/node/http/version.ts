import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { findPackageRoot } from '../../util/package-root.js'

let cached: string | undefined
/** The package version, read once from package.json. */
export function packageVersion (): string {
  if (cached !== undefined) return cached
  try {
    const pkg = JSON.parse(readFileSync(join(findPackageRoot(), 'package.json'), 'utf8')) as { version?: string }
    cached = pkg.version ?? '0.0.0'
  } catch {
    cached = '0.0.0'
  }
  return cached
}
