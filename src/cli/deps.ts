import { RbtClient } from '../client/rbt-client.js'
import { nodeHttpTransport } from '../client/node-http-transport.js'
import { terminalPrompter, type Prompter } from './prompter.js'

/** What a client command needs from the outside world; tests replace these with stubs. */
export interface CliDeps {
  makeClient: (baseUrl: string, token?: string) => RbtClient
  prompter: Prompter
  stdout: (text: string) => void
  stderr: (text: string) => void
  /** whether stdout and stderr are terminals (colour; NO_COLOR and FORCE_COLOR still apply) */
  isTTY: { stdout: boolean, stderr: boolean }
}

function defaults (): CliDeps {
  return {
    makeClient: (baseUrl, token) => new RbtClient({ baseUrl, transport: nodeHttpTransport(), token }),
    prompter: terminalPrompter(),
    stdout: (t) => { process.stdout.write(t) },
    stderr: (t) => { process.stderr.write(t) },
    isTTY: { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true }
  }
}

let current: CliDeps = defaults()
export function cliDeps (): CliDeps { return current }
/** For tests: replace some dependencies; returns a function that restores the previous ones. */
export function setCliDeps (partial: Partial<CliDeps>): () => void {
  const prev = current
  current = { ...current, ...partial }
  return () => { current = prev }
}
