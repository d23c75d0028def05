import { Errors, type Hook } from '@oclif/core'
import { normaliseArgv, type FlagInfo } from './go-flags.js'

/** oclif preparse hook: rewrites Go-style flags before oclif parses them. */
const hook: Hook<'preparse'> = async function ({ argv, options }) {
  const declared = (options.flags ?? {}) as Record<string, { type: string, allowNo?: boolean }>
  const flags: Record<string, FlagInfo> = {}
  for (const [name, f] of Object.entries(declared)) flags[name] = { type: f.type === 'boolean' ? 'boolean' : 'option', allowNo: f.allowNo }
  try {
    return normaliseArgv(argv, flags)
  } catch (e) {
    // a usage error: the command's catch turns it into one [ERROR] line and exit code 2
    throw new Errors.CLIError((e as Error).message, { exit: 2 })
  }
}
export default hook
