import { Config } from '@oclif/core'
import type { HttpRequest, HttpTransport } from '../../src/client/transport.js'
import type { Prompter } from '../../src/cli/prompter.js'
import { ROOT } from '../helpers/cli.js'
import { fastVerb } from '../../src/cli/fast-path.js'
import { helpArgv } from '../../src/cli/go-flags.js'

// the commands run from the bundle, as shipped (package.json's oclif section names its files): the
// client and the dependency hook come from the bundle too, the same modules its verbs import
const bundle = (file: string): string => new URL(`../../bundle/${file}`, import.meta.url).href
const { RbtClient, nodeHttpTransport } = await import(bundle('client.js')) as typeof import('../../src/client/index.js')
const { setCliDeps } = await import(bundle('cli/deps.js')) as typeof import('../../src/cli/deps.js')
// the fast path's build of the client verbs (src/cli/fast-path.ts) has its own dependency hook and
// client classes: a call it takes is stubbed there, as bin/run.js would run it
const FAST_DIR = new URL('../../bundle/fast/', import.meta.url)
const fastDeps = await import(new URL('cli/deps.js', FAST_DIR).href) as typeof import('../../src/cli/deps.js')
const { RbtClient: FastRbtClient } = await import(new URL('cli/rbt-client.js', FAST_DIR).href) as typeof import('../../src/client/rbt-client.js')

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
 * [ERROR] line fails the test (scripts read [ERROR] as failure). The call takes the fast path when
 * bin/run.js would (`path` says which ran); `oclif: true` sends it to oclif whatever it is. With `'node'` instead of a
 * responder the command talks HTTP to the node its -addr/-port name (requests are not recorded).
 */
export async function runCommand (argv: string[], respond: Responder | 'node', prompter?: Partial<Prompter>, opts: { tty?: boolean, oclif?: boolean } = {}): Promise<{ code: number, stdout: string, stderr: string, requests: Recorded[], path: 'fast' | 'oclif' }> {
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
  const deps = {
    stdout: (t: string) => { stdout += t },
    stderr: (t: string) => { stderr += t },
    prompter: { interactive: false, password: async () => { throw new Error('no prompt expected') }, ...prompter },
    isTTY: { stdout: opts.tty === true, stderr: opts.tty === true }
  }
  const restoreOclif = setCliDeps({ ...deps, makeClient: (baseUrl) => new RbtClient({ baseUrl, transport }) })
  const restoreFast = fastDeps.setCliDeps({ ...deps, makeClient: (baseUrl) => new FastRbtClient({ baseUrl, transport }) })
  const restore = (): void => { restoreFast(); restoreOclif() }
  let code = 0
  let path: 'fast' | 'oclif' = 'oclif'
  const exit = process.exit
  try {
    // as src/cli/main.ts does: the fast path when it takes the call, else oclif
    const fast = opts.oclif === true ? undefined : await fastVerb(FAST_DIR, helpArgv(argv))
    if (fast !== undefined) {
      path = 'fast'
      await fast.run()
    } else {
      const cfg = await loadConfig()
      const [id, ...args] = argv
      const cmd = cfg.findCommand(id)
      if (cmd === undefined) throw new Error(`no command ${id}`)
      const C = await cmd.load()
      await C.run(args, cfg)
    }
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
  return { code, stdout, stderr, requests, path }
}
