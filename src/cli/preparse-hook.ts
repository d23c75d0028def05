import type { Hook } from '@oclif/core'
import { normaliseArgv, type FlagInfo } from './go-flags.js'
import { formatLine } from '../util/logger.js'

/** oclif preparse hook: rewrites Go-style flags before oclif parses them. */
const hook: Hook<'preparse'> = async function ({ argv, options }) {
  const declared = (options.flags ?? {}) as Record<string, { type: string, allowNo?: boolean }>
  const flags: Record<string, FlagInfo> = {}
  for (const [name, f] of Object.entries(declared)) flags[name] = { type: f.type === 'boolean' ? 'boolean' : 'option', allowNo: f.allowNo }
  try {
    return normaliseArgv(argv, flags)
  } catch (e) {
    process.stderr.write(formatLine('ERROR', (e as Error).message) + '\n')
    process.exit(2)
  }
}
export default hook
