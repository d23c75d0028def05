import { Low } from 'lowdb'
import { JSONFile } from 'lowdb/node'

/** The small, human-readable node state kept in lowdb: bootstrap list, DID→peer map, settings. */
export interface PeerEntry { peerId: string, didType?: number, updatedAt: number }

export interface NodeConfigData {
  bootstrap: string[]
  peers: Record<string, PeerEntry>
  settings: Record<string, unknown>
}

export class NodeConfigStore {
  private readonly db: Low<NodeConfigData>
  private queue: Promise<unknown> = Promise.resolve()

  constructor (readonly path: string) {
    this.db = new Low<NodeConfigData>(new JSONFile<NodeConfigData>(path), { bootstrap: [], peers: {}, settings: {} })
  }

  async open (seedBootstrap: string[] = []): Promise<void> {
    await this.db.read()
    const fresh = this.db.data.bootstrap.length === 0 && Object.keys(this.db.data.settings).length === 0 && Object.keys(this.db.data.peers).length === 0
    this.db.data.bootstrap ??= []
    this.db.data.peers ??= {}
    this.db.data.settings ??= {}
    if (fresh && this.db.data.settings.seeded !== true) {
      this.db.data.bootstrap = [...new Set(seedBootstrap)]
      this.db.data.settings.seeded = true
      await this.db.write()
    }
  }

  get data (): Readonly<NodeConfigData> { return this.db.data }

  /** Serialised read-modify-write; the file is replaced atomically by lowdb (temp file + rename). */
  async update<T> (fn: (d: NodeConfigData) => T): Promise<T> {
    const run = this.queue.then(async () => {
      const out = fn(this.db.data)
      await this.db.write()
      return out
    })
    this.queue = run.catch(() => {})
    return await run
  }
}
