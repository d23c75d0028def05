/**
 * Feature components (docs/architecture.md, "Components"). The node is a list of components, each
 * built by a factory over the components listed before it, the way js-libp2p builds a node from
 * service factories. The composition root (node/rbt-node.ts) only lists them; this module builds,
 * starts and stops them.
 */
import { setMaxListeners } from 'node:events'
import type { NodeOptions } from '../../config/node-options.js'
import type { P2pHost } from '../../p2p/host.js'
import type { Rpc } from '../../p2p/rpc.js'
import type { ApiServices } from '../../api/server/services.js'
import { errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import type { DataDirLayout } from './data-dir.js'

/** What a component gets when the p2p core starts. */
export interface Network {
  host: P2pHost
  /** the one rpc node of the host, serving every component's methods (a component narrows it to its own methods) */
  rpc: Rpc<any>
  /** the host's identity key */
  privateKey: import('@libp2p/interface').PrivateKey
}

export interface Component {
  /** at node start, in list order (storage opens, listeners bind) */
  start?: () => Promise<void> | void
  /** at node stop, in reverse list order */
  stop?: () => Promise<void> | void
  /** the rpc methods this component serves to peers (the p2p component registers them when the core starts) */
  rpcMethods?: () => Promise<object> | object
  /**
   * when the p2p core has started: network adapters, gossip topics, timers. The network parts of all
   * components start side by side; one that needs another's started first names it in `networkAfter`.
   */
  startNetwork?: (net: Network) => Promise<void> | void
  /** components whose network part must have started before this one's starts (by name) */
  networkAfter?: readonly string[]
  /** when the p2p core stops (before the host), in reverse list order */
  stopNetwork?: () => Promise<void> | void
  /** what this component serves over HTTP (the api component merges them into the app's services) */
  api?: Partial<ApiServices>
}

/**
 * Runs `run` for every entry side by side, except that an entry waits until every entry it names in
 * `after(entry)` has finished (names not among the entries are ignored: a component without that
 * part). Resolves when all have finished; rejects with the first failure (entries waiting on a
 * failed one are not run), once every entry under way has settled.
 */
export async function runByDependencies<T> (entries: ReadonlyArray<readonly [string, T]>, after: (entry: T) => readonly string[] | undefined, run: (name: string, entry: T) => Promise<void>): Promise<void> {
  const names = new Set(entries.map(([n]) => n))
  const done = new Map<string, Promise<void>>()
  const visiting = new Set<string>()
  const startOf = (name: string, entry: T): Promise<void> => {
    const known = done.get(name)
    if (known !== undefined) return known
    if (visiting.has(name)) throw new Error(`network parts wait on each other in a circle: ${[...visiting, name].join(' → ')}`)
    visiting.add(name)
    const before = (after(entry) ?? []).filter((n) => names.has(n)).map((n) => startOf(n, entries.find(([m]) => m === n)![1]))
    visiting.delete(name)
    const p = Promise.all(before).then(async () => { await run(name, entry) })
    done.set(name, p)
    return p
  }
  const all = entries.map(([name, entry]) => startOf(name, entry))
  const settled = await Promise.allSettled(all)
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (failed !== undefined) throw failed.reason
}

/** What every factory gets besides the components before it. */
export interface Base {
  options: NodeOptions
  layout: DataDirLayout
  /** this component's logger: a child of the node's, named after the component */
  log: Logger
  /** aborted when the node starts to stop: one signal for every component (its listener limit lifted once) */
  signal: AbortSignal
  /** ports this node's own listeners are bound to (the HTTP listeners add theirs) */
  ownPorts: Set<number>
  /** asks the node to stop (POST /svc/v1/node/shutdown) */
  shutdown: () => void
  /** every component of the node, in list order (for the few that serve all the others: p2p, http) */
  components: () => Array<[string, Component]>
}

/** The components built so far, by name, with the base; what a factory is handed. */
export type Components<T = Record<string, Component>> = T & { base: Base }

export type Factory<Needs, C extends Component> = (c: Components<Needs>) => C

/** A declared list of components: names and factories, in start order. */
export type ComponentList = ReadonlyArray<readonly [string, Factory<any, Component>]>

export class ComponentSet {
  readonly byName = new Map<string, Component>()
  private readonly controller = new AbortController()
  private started: Array<[string, Component]> = []

  constructor (list: ComponentList, base: Omit<Base, 'log' | 'signal' | 'components'> & { logger: Logger }) {
    // every component and every call it makes may listen on the one signal: lift the limit once
    setMaxListeners(Infinity, this.controller.signal)
    const { logger, ...rest } = base
    const built: Record<string, unknown> = {}
    for (const [name, factory] of list) {
      const baseOf: Base = { ...rest, log: logger.child(name), signal: this.controller.signal, components: () => this.all() }
      // a factory may read only components listed before it: reading a later one is a listing mistake
      const view = new Proxy(built, {
        get: (t, k) => {
          if (k === 'base') return baseOf
          if (typeof k === 'string' && !(k in t)) throw new Error(`component ${name} needs ${k}, which is not listed before it`)
          return t[k as string]
        }
      })
      const component = factory(view as Components<any>)
      built[name] = component
      this.byName.set(name, component)
    }
  }

  get signal (): AbortSignal { return this.controller.signal }

  all (): Array<[string, Component]> { return [...this.byName] }

  /** Starts every component in list order; on a failure the caller stops (the failed one included). */
  async start (): Promise<void> {
    const fault = startFault()
    for (const entry of this.byName) {
      this.started.push(entry)
      if (fault?.component === entry[0]) {
        const e = new Error(`test hook: the start of ${entry[0]} fails (${fault.how})`)
        if (fault.how === 'throw') throw e
        // a rejection nobody awaits, as a defect in a start would leave
        void Promise.reject(e)
      }
      await entry[1].start?.()
    }
  }

  /** Aborts the shared signal, then stops the started components in reverse order; errors are logged, not thrown. */
  async stop (log: Logger): Promise<void> {
    this.controller.abort()
    const started = this.started
    this.started = []
    for (const [name, c] of [...started].reverse()) {
      try { await c.stop?.() } catch (e) { log.warn(`${name} stop: ${errorMessage(e)}`) }
    }
  }
}

/**
 * Test builds only (RBTNODE_TEST_HOOKS=1): RBTNODE_START_FAULT=<component>:throw fails that
 * component's start with an unforeseen error, `:reject` leaves a rejected promise unhandled there.
 */
function startFault (): { component: string, how: 'throw' | 'reject' } | undefined {
  const v = process.env.RBTNODE_START_FAULT
  if (process.env.RBTNODE_TEST_HOOKS !== '1' || v === undefined) return undefined
  const [component = '', how = 'throw'] = v.split(':')
  return { component, how: how === 'reject' ? 'reject' : 'throw' }
}
