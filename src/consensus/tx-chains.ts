import { buildBundle, pickBundle } from './bundle.js'
import type { ChainBundle } from './messages.js'
import type { Ledger } from './ports.js'

/** What a validator of some of a transaction's tokens is sent: those tokens' part of its bundle. */
export interface TokenChains {
  /** is `id` one of the transaction's tokens? */
  has: (id: string) => boolean
  /** the chains of `ids` (tokens of the transaction), each part with its parent's chain, and the contents a validator needs */
  of: (ids: readonly string[]) => Promise<ChainBundle>
}

/**
 * The chains of one transaction's tokens, read from the ledger only for the tokens some quorum or
 * the receiver lacks, and each once (docs/protocol.md, "Validated states"): a transfer whose quorums
 * and receiver know every token reads none. The same set of tokens asked again gives the same
 * bundle object, so what is sent to several quorums is packed and compressed once.
 */
export class TxChains implements TokenChains {
  private readonly tokens: ReadonlySet<string>
  /** the chains read so far (tokens and their parents) */
  private readonly read: ChainBundle = { chains: {}, contents: {} }
  /** tokens whose own part of the bundle (parent included) has been read */
  private readonly done = new Set<string>()
  private readonly given = new Map<string, Promise<ChainBundle>>()
  /** reads one after another, so that two quorums lacking the same token do not read it twice */
  private tail: Promise<unknown> = Promise.resolve()

  constructor (private readonly ledger: Ledger, tokens: readonly string[]) {
    this.tokens = new Set(tokens)
  }

  has (id: string): boolean { return this.tokens.has(id) }

  async of (ids: readonly string[]): Promise<ChainBundle> {
    const key = ids.join(',')
    let out = this.given.get(key)
    if (out === undefined) {
      out = this.tail.then(async () => await this.collect(ids))
      this.tail = out.catch(() => {})
      this.given.set(key, out)
      // a failed read is not kept: the next ask reads again
      out.catch(() => { this.given.delete(key) })
    }
    return await out
  }

  private async collect (ids: readonly string[]): Promise<ChainBundle> {
    if (ids.length === 0) return { chains: {}, contents: {} }
    const todo = ids.filter((id) => !this.done.has(id))
    if (todo.length > 0) {
      // each part with its parent's chain only: a validator that lacks older ancestors says which (docs/protocol.md, "Part-token ancestry")
      const got = await buildBundle(this.ledger, todo, { levels: 1 })
      for (const [id, c] of Object.entries(got.chains)) this.read.chains[id] ??= c
      for (const [id, c] of Object.entries(got.contents)) this.read.contents[id] ??= c
      for (const id of todo) this.done.add(id)
    }
    return await pickBundle(this.read, ids, { levels: 1 })
  }
}
