import { ErrorCode, RbtError } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import type { NodeConfigStore } from '../../storage/node-config-store.js'
import type { BootstrapApi } from '../../api/server/services.js'

export interface Dialer {
  /** Dial in the background; failures are logged, not thrown. */
  dialBootstrap: (addr: string) => void
  parse: (addr: string) => void
}

/** Bootstrap peers: persisted in the node config, dialled when added and at start. */
export class BootstrapService implements BootstrapApi {
  constructor (private readonly store: NodeConfigStore, private readonly dialer: () => Dialer | undefined, private readonly log: Logger) {}

  async list (): Promise<string[]> { return [...this.store.data.bootstrap] }

  private validate (peers: string[]): string[] {
    const d = this.dialer()
    const out: string[] = []
    for (const p of peers) {
      const t = p.trim()
      if (!t.startsWith('/')) throw new RbtError(ErrorCode.INVALID_MULTIADDR, `Invalid bootstrap peer "${p}": a multiaddress starts with /`)
      if (d !== undefined) d.parse(t)
      out.push(t)
    }
    return out
  }

  async add (peers: string[]): Promise<string[]> {
    const clean = this.validate(peers)
    const all = await this.store.update((data) => {
      data.bootstrap = [...new Set([...data.bootstrap, ...clean])]
      return [...data.bootstrap]
    })
    const d = this.dialer()
    if (d !== undefined) for (const p of clean) d.dialBootstrap(p)
    else this.log.info('core not started: bootstrap peers will be dialled when it starts')
    return all
  }

  async remove (peers: string[]): Promise<string[]> {
    const clean = this.validate(peers)
    return await this.store.update((data) => {
      const drop = new Set(clean)
      data.bootstrap = data.bootstrap.filter((p) => !drop.has(p))
      return [...data.bootstrap]
    })
  }

  async removeAll (): Promise<string[]> {
    return await this.store.update((data) => { data.bootstrap = []; return [] })
  }
}
