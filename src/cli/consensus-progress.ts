/** Long-running calls from the CLI, with a progress line on an interactive terminal. */
import type { RbtClient } from '../client/rbt-client.js'
import type { Envelope } from '../api/contract/envelope.js'
import type { BaseFlags } from './base-command.js'
import { cliDeps, setCliDeps } from './deps.js'
import { completeTwoStep } from './password.js'

/**
 * Runs `work` while showing, on an interactive stderr and without `--json`, `label` and the
 * seconds it has been running (plus what `detail` says, if given); the line is cleared at the end
 * and while a password is asked for on the terminal.
 */
export async function withProgress<T> (flags: BaseFlags, label: string, work: () => Promise<T>, detail?: () => string): Promise<T> {
  if (process.stderr.isTTY !== true || flags.json) return await work()
  const started = Date.now()
  const clear = (): void => { cliDeps().stderr('\r\x1b[K') }
  let paused = false
  const timer = setInterval(() => {
    if (paused) return
    const extra = detail?.() ?? ''
    cliDeps().stderr(`\r\x1b[K${label}… ${((Date.now() - started) / 1000).toFixed(0)} s${extra !== '' ? ', ' + extra : ''}`)
  }, 500)
  const prompter = cliDeps().prompter
  const restore = setCliDeps({
    prompter: {
      interactive: prompter.interactive,
      password: async (message) => {
        paused = true
        clear()
        try { return await prompter.password(message) } finally { paused = false }
      }
    }
  })
  try {
    return await work()
  } finally {
    clearInterval(timer)
    restore()
    clear()
  }
}

/**
 * Completes the two-step signing of a transaction (as `completeTwoStep`) while showing the seconds
 * the operation (by default consensus) has been running.
 */
export async function completeWithProgress (client: RbtClient, first: Envelope<unknown>, flags: BaseFlags, label = 'consensus running'): Promise<Envelope<unknown>> {
  return await withProgress(flags, label, async () => await completeTwoStep(client, first, flags))
}
