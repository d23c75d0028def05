/**
 * The package's main entry (`import { startNode } from 'rbtnode'`): a node embedded in a program,
 * with its typed client. The client alone is `rbtnode/client`.
 */
import './util/polyfill.js'
import { RbtClient } from './client/rbt-client.js'
import type { NodeOptions, RunFlags } from './config/node-options.js'
import type { LogLevel } from './util/logger.js'

export { RbtClient } from './client/rbt-client.js'
export { ApiError } from './client/api-error.js'
export type { NodeOptions, RunFlags } from './config/node-options.js'

export interface StartNodeOptions extends RunFlags {
  /** where the node's log lines go (default: stderr); each call gets one formatted line */
  log?: (line: string) => void
  /** lowest level written (default INFO; warnings and errors are always kept for the node's status) */
  logLevel?: LogLevel
}

export interface EmbeddedNode {
  /** the resolved options the node runs with (ports, data dir, network) */
  readonly options: NodeOptions
  /** its API, e.g. http://127.0.0.1:20000 */
  readonly url: string
  /** libp2p peer id (empty when started with s: false, until the core starts) */
  readonly peerId: string
  /** a client of its API */
  readonly client: RbtClient
  /** resolves when the node has stopped (stop() or a shutdown request) */
  readonly closed: Promise<void>
  /** graceful stop; the client is closed too */
  stop: () => Promise<void>
}

/**
 * Starts a node in this process, as `rbtnode run` does with the same flags (`p` working directory,
 * `n`, `port`, `swarmPort`, `testNet`, `mdns`…), and returns once its API answers. Signals are
 * left to the program: call stop().
 */
export async function startNode (opts: StartNodeOptions = {}): Promise<EmbeddedNode> {
  const { resolveNodeOptions } = await import('./config/node-options.js')
  const { createLogger } = await import('./util/logger.js')
  const { RbtNode } = await import('./node/rbt-node.js')
  const { log, logLevel, ...flags } = opts
  const options = resolveNodeOptions(flags)
  const logger = createLogger({ ...(log !== undefined ? { write: log } : {}), ...(logLevel !== undefined ? { level: logLevel } : {}), format: options.logFormat })
  const node = await RbtNode.init({ options, logger })
  const host = options.apiHost === '0.0.0.0' || options.apiHost === '::' ? '127.0.0.1' : options.apiHost
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${options.apiPort}`
  const client = new RbtClient({ baseUrl: url })
  const peerId = options.startCore ? ((await client.call('nodePeerId')).result ?? '') : ''
  return {
    options,
    url,
    peerId,
    client,
    closed: node.closed,
    stop: async () => {
      await node.close()
      await client.close()
    }
  }
}
