/** Finishing a consensus transaction from the CLI, with a progress line on an interactive terminal. */
import type { RbtClient } from '../client/rbt-client.js'
import type { Envelope } from '../api/contract/envelope.js'
import type { BaseFlags } from './base-command.js'
import { cliDeps } from './deps.js'
import { completeTwoStep } from './password.js'

/**
 * Completes the two-step signing of a transaction (as `completeTwoStep`) while showing, on an
 * interactive stderr and without `--json`, the seconds consensus has been running; the line is
 * cleared once the answer arrives.
 */
export async function completeWithProgress (client: RbtClient, first: Envelope<unknown>, flags: BaseFlags): Promise<Envelope<unknown>> {
  const started = Date.now()
  const tty = process.stderr.isTTY === true && !flags.json
  const timer = tty ? setInterval(() => { cliDeps().stderr(`\rconsensus running… ${((Date.now() - started) / 1000).toFixed(0)} s`) }, 500) : undefined
  try {
    const env = await completeTwoStep(client, first, flags)
    if (timer !== undefined) cliDeps().stderr('\r\x1b[K')
    return env
  } finally {
    if (timer !== undefined) clearInterval(timer)
  }
}
