import { Config } from '@oclif/core'
import type { HttpRequest, HttpTransport } from '../../src/client/transport.js'
import type { Prompter } from '../../src/cli/prompter.js'
import { ROOT } from '../helpers/cli.js'

// the commands run from the bundle, as shipped (package.json's oclif section names its files): the
// client and the dependency hook come from the bundle too, the same modules its verbs import
const bundle = (file: string): string => new URL(`../../bundle/${file}`, import.meta.url).href
const { RbtClient, nodeHttpTransport } = await import(bundle('client.js')) as typeof import('../../src/client/index.js')
const { setCliDeps } = await import(bundle('cli/deps.js')) as typeof import('../../src/cli/deps.js')

export interface Recorded { method: string, url: string, body?: unknown }
export type Responder = (req: Recorded) => { status?: number, body: unknown }

let config: Config | undefined
async function loadConfig (): Promise<Config> {
  config ??= await Config.load(ROOT)
  return config
}

/**
 * Runs a command in-process with a stub HTTP transport behind the real client and a stub prompter.
 * Returns what the command wrote and the exit code it asked for; a command that exits 0 with an
 * [ERROR] line fails the test (scripts read [ERROR] as failure). With `'node'` instead of a
 * responder the command talks HTTP to the node its -addr/-port name (requests are not recorded).
 */
export async function runCommand (argv: string[], respond: Responder | 'node', prompter?: Partial<Prompter>, opts: { tty?: boolean } = {}): Promise<{ code: number, stdout: string, stderr: string, requests: Recorded[] }> {
  const requests: Recorded[] = []
  const transport: HttpTransport = respond === 'node' ? nodeHttpTransport() : {
    request: async (req: HttpRequest) => {
      const b = req.body
      let bytes: string | Uint8Array | undefined
      if (b !== undefined && typeof b === 'object' && !(b instanceof Uint8Array)) {
        // a streamed body (a file upload): read whole here, the test's files are small
        const chunks: Uint8Array[] = []
        for await (const c of b.chunks()) chunks.push(c)
        bytes = Buffer.concat(chunks)
      } else bytes = b
      const text = bytes === undefined ? undefined : typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('latin1')
      const multipart = /^multipart\//.test(req.headers?.['content-type'] ?? '')
      const rec: Recorded = { method: req.method, url: req.url, body: text === undefined ? undefined : multipart ? text : JSON.parse(text) }
      requests.push(rec)
      const r = respond(rec)
      return { status: r.status ?? 200, text: JSON.stringify(r.body) }
    }
  }
  let stdout = ''
  let stderr = ''
  const restore = setCliDeps({
    makeClient: (baseUrl) => new RbtClient({ baseUrl, transport }),
    stdout: (t) => { stdout += t },
    stderr: (t) => { stderr += t },
    prompter: { interactive: false, password: async () => { throw new Error('no prompt expected') }, ...prompter },
    isTTY: { stdout: opts.tty === true, stderr: opts.tty === true }
  })
  const cfg = await loadConfig()
  let code = 0
  const exit = process.exit
  try {
    const [id, ...args] = argv
    const cmd = cfg.findCommand(id)
    if (cmd === undefined) throw new Error(`no command ${id}`)
    const C = await cmd.load()
    await C.run(args, cfg)
  } catch (e) {
    const err = e as { oclif?: { exit?: number }, message: string }
    if (err.oclif?.exit !== undefined) code = err.oclif.exit
    else { code = -1; stderr += `UNCAUGHT ${err.message}` }
  } finally {
    process.exit = exit
    restore()
  }
  // scripts read any [ERROR] line as a failed call: no verb that succeeds may print one
  if (code === 0 && /\[ERROR\]/.test(stderr)) throw new Error(`${argv[0] ?? ''} exited 0 but printed [ERROR]:\n${stderr}`)
  return { code, stdout, stderr, requests }
}
