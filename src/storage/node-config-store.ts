import { readFile } from 'node:fs/promises'
import { Low, type Adapter } from 'lowdb'
import { removeLeftovers, writeFileDurable } from '../util/durable-write.js'
import { ErrorCode, RbtError } from '../util/errors.js'

/** The small, human-readable node state kept in lowdb: bootstrap list, DID→peer map, settings. */
export interface PeerEntry { peerId: string, didType?: number, updatedAt: number }

export interface NodeConfigData {
  bootstrap: string[]
  peers: Record<string, PeerEntry>
  settings: Record<string, unknown>
}

/**
 * node.json through the durable-write helper (lowdb's own file adapter renames without syncing).
 * A file that does not parse stops the start with the cause and the way out: it holds the quorum
 * list and sealed settings, which a silent reset would drop.
 */
class DurableJsonFile<T> implements Adapter<T> {
  constructor (private readonly path: string) {}

  async read (): Promise<T | null> {
    let text: string
    try {
      text = await readFile(this.path, 'utf8')
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw e
    }
    try {
      return JSON.parse(text) as T
    } catch {
      throw new RbtError(ErrorCode.CONFIG, `${this.path} is damaged (${text.length === 0 ? 'empty' : 'not JSON'}; cut short by a crash while it was written): ` +
        'restore it from a backup, or move it away to start with an empty one (then add the bootstrap peers and the quorum list again: addbootstrap, addquorum)')
    }
  }

  async write (data: T): Promise<void> {
    await writeFileDurable(this.path, JSON.stringify(data, null, 2))
  }
}

export class NodeConfigStore {
  private readonly db: Low<NodeConfigData>
  private queue: Promise<unknown> = Promise.resolve()

  constructor (readonly path: string) {
    this.db = new Low<NodeConfigData>(new DurableJsonFile<NodeConfigData>(path), { bootstrap: [], peers: {}, settings: {} })
  }

  async open (seedBootstrap: string[] = []): Promise<void> {
    await removeLeftovers(this.path)
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

  /** Serialised read-modify-write; the file is replaced durably (temp file, sync, rename). */
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
