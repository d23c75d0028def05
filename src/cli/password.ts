/**
 * Passwords on the command line: the flag, or (with -fp) a hidden prompt. Without a terminal a
 * forced prompt cannot be shown: the flag must be given, and the error names it.
 */
import type { RbtClient } from '../client/rbt-client.js'
import type { Envelope } from '../api/contract/envelope.js'
import { pendingChallenge } from '../client/two-step.js'
import { UsageError, type BaseFlags } from './base-command.js'
import { cliDeps } from './deps.js'
import { formatLine } from '../util/logger.js'

/** The documented default private/quorum key password. */
export const DEFAULT_KEY_PASSWORD = 'mypassword'

export type PasswordFlag = 'privPWD' | 'quorumPWD'

export async function passwordFrom (flags: BaseFlags, name: PasswordFlag, what: string): Promise<string> {
  return warnIfDefault(await chosenPassword(flags, name, what), flags, name, what)
}

async function chosenPassword (flags: BaseFlags, name: PasswordFlag, what: string): Promise<string> {
  const given = flags[name]
  if (flags.fp !== true) return given !== undefined && given !== '' ? given : DEFAULT_KEY_PASSWORD
  const prompter = cliDeps().prompter
  if (!prompter.interactive) {
    if (given !== undefined && given !== '') return given
    throw new UsageError(`-fp asks for the ${what} on the terminal, but there is no terminal: pass it with -${name}`)
  }
  const pwd = await prompter.password(`Enter the ${what}`)
  if (pwd === '') throw new UsageError(`the ${what} must not be empty`)
  return pwd
}

/**
 * The default password is public (the reference documents it): a key sealed with it protects
 * nothing. It stays accepted, but every command that uses it says so on stderr, in the CLI's
 * log-line format (a `[WARN]` line; the password itself is never printed).
 */
function warnIfDefault (pwd: string, flags: BaseFlags, name: PasswordFlag, what: string): string {
  if (pwd !== DEFAULT_KEY_PASSWORD) return pwd
  const given = flags[name] !== undefined && flags[name] !== ''
  const why = flags.fp === true || given ? `the ${what} given is the default one` : `-${name} not given: using the default ${what}`
  // a progress line may be on the terminal: start a fresh line there
  const clear = process.stderr.isTTY === true ? '\r\x1b[K' : ''
  cliDeps().stderr(`${clear}${formatLine('WARN', `${why}, which anyone can look up; give the DID a password of its own (-${name}, or -fp to type it)`)}\n`)
  return pwd
}

/**
 * Drives the two-step flow of an asynchronous call with the client's own driver: answers "Password
 * needed" challenges with the private-key password (prompting again after a wrong one when
 * prompting) until the final envelope arrives. Challenges for an external signature cannot be
 * answered by this CLI.
 */
export async function completeTwoStep (client: RbtClient, first: Envelope<unknown>, flags: BaseFlags): Promise<Envelope<unknown>> {
  const ch = pendingChallenge(first)
  if (ch !== undefined && ch.hash !== null) {
    throw new UsageError(`the DID's key is held outside the node: sign the hash ${ch.hash} (base64) with it and POST {id: "${ch.id}", signature} to /svc/v1/signature`)
  }
  const retry = flags.fp === true && cliDeps().prompter.interactive
  return await client.completeSigned(first, {
    password: async (_c, attempt) => {
      if (attempt > 1) cliDeps().stderr('wrong password, try again\n')
      return await passwordFrom(flags, 'privPWD', 'private key password')
    },
    passwordRetries: retry ? 31 : 0
  })
}
