import { expect } from 'chai'
import { join } from 'node:path'
import { LevelStore, type StoreEvent } from '../../../src/storage/level-store.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import { Tmpfs, requireTmpfs } from '../../helpers/tmpfs.js'
import { waitFor } from '../../helpers/wait.js'

/** Writes until one fails; returns the keys acknowledged on the way and the failure. */
async function writeUntilRefused (store: LevelStore, prefix: string, value: unknown): Promise<{ acked: string[], error: unknown }> {
  const acked: string[] = []
  for (let i = 0; i < 1000; i++) {
    const key = `${prefix}${i}`
    try {
      await store.batch([{ type: 'put', collection: 'tokens', key, value }])
      acked.push(key)
    } catch (error) { return { acked, error } }
  }
  throw new Error('the disk never refused a write')
}

describe('storage: LevelStore after a storage error', function () {
  this.timeout(60_000)
  let fs: Tmpfs
  let store: LevelStore
  const events: StoreEvent[] = []
  const big = { blob: 'x'.repeat(4000) }

  before(function () { requireTmpfs(this) })
  beforeEach(async () => {
    fs = Tmpfs.mount(8)
    events.length = 0
    store = new LevelStore(join(fs.dir, 'db'), { onEvent: (e) => events.push(e), probeMinMs: 20, probeMaxMs: 200, probeBytes: 1 << 16 })
    await store.open()
  })
  afterEach(async () => { await store?.close(); fs?.dispose() })

  async function keysAfterRestart (): Promise<Set<string>> {
    await store.close()
    store = new LevelStore(join(fs.dir, 'db'))
    await store.open()
    const keys = new Set<string>()
    for await (const k of store.collection('tokens').keys()) keys.add(k)
    return keys
  }

  it('acknowledges no write after a full disk until reopened, loses none that it acknowledged, and serves reads meanwhile', async () => {
    const acked: string[] = []
    for (let i = 0; i < 3; i++) {
      await store.batch([{ type: 'put', collection: 'tokens', key: `before${i}`, value: big }])
      acked.push(`before${i}`)
    }
    fs.fill()
    const full = await writeUntilRefused(store, 'full', big)
    acked.push(...full.acked)
    expect(full.error).to.be.instanceOf(RbtError)
    expect((full.error as RbtError).code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
    expect((full.error as Error).message).not.to.include(fs.dir)
    // further writes are refused the same way, also through a collection; reads go on
    for (const attempt of [
      async () => { await store.batch([{ type: 'put', collection: 'tokens', key: 'refused', value: 1 }]) },
      async () => { await store.collection('tokens').put('refused2', 1) }
    ]) {
      try { await attempt(); expect.fail('a write was acknowledged on a full disk') } catch (e) { expect((e as RbtError).code).to.equal(ErrorCode.INSUFFICIENT_STORAGE) }
    }
    expect(await store.collection('tokens').get('before0')).to.deep.equal(big)
    const listed: string[] = []
    for await (const k of store.collection('tokens').keys()) listed.push(k)
    expect(listed).to.include.members(acked)

    fs.free()
    // the store comes back by itself once a write can succeed
    await waitFor(async () => {
      try {
        await store.batch([{ type: 'put', collection: 'tokens', key: 'after0', value: big }])
        return true
      } catch (e) { if (!(e instanceof RbtError)) throw e; return false }
    }, { what: 'writes taken again', timeoutMs: 20_000 }).catch((e) => { throw new Error(`${(e as Error).message}; events: ${JSON.stringify(events)}`) })
    acked.push('after0')
    for (let i = 1; i < 5; i++) {
      await store.batch([{ type: 'put', collection: 'tokens', key: `after${i}`, value: big }])
      acked.push(`after${i}`)
    }
    expect(events.map((e) => e.kind)).to.include.members(['fault', 'reopened'])
    const kept = await keysAfterRestart()
    expect(acked.filter((k) => !kept.has(k)), 'acknowledged writes lost at the restart').to.deep.equal([])
  })
})
