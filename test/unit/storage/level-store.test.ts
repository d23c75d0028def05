import { expect } from 'chai'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore, type StoreEvent } from '../../../src/storage/level-store.js'
import { NodeConfigStore } from '../../../src/storage/node-config-store.js'
import { RbtError } from '../../../src/util/errors.js'

describe('storage: LevelStore', () => {
  let dir = ''
  let store: LevelStore
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-level-'))
    store = new LevelStore(join(dir, 'db'))
    await store.open()
  })
  afterEach(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })

  it('applies a batch across collections atomically', async () => {
    await store.batch([
      { type: 'put', collection: 'tokens', key: 't1', value: { status: 'Locked' } },
      { type: 'put', collection: 'blocks', key: 't1/0', value: { n: 0 } },
      { type: 'put', collection: 'txs', key: 'tx1', value: { id: 'tx1' } }
    ])
    expect(await store.collection('tokens').get('t1')).to.deep.equal({ status: 'Locked' })
    // a batch that fails validation writes nothing
    try {
      await store.batch([
        { type: 'put', collection: 'tokens', key: 't1', value: { status: 'Free' } },
        { type: 'put', collection: 'Bad Name', key: 'x', value: 1 }
      ])
      expect.fail('should throw')
    } catch (e) { expect((e as Error).message).to.match(/bad collection name/) }
    expect(await store.collection('tokens').get('t1')).to.deep.equal({ status: 'Locked' })
  })

  it('a batch writes the very keys and bytes a collection\'s own put writes, and one with an unstorable value writes nothing', async () => {
    const value = { s: 'é\u0000"\\', n: 1.5, a: [1, null, { b: true }], u: 'x' }
    await store.collection('tokens').put('by-put', value)
    await store.batch([{ type: 'put', collection: 'tokens', key: 'by-batch', value }, { type: 'put', collection: 'owner-index', key: 'by-batch', value: 7 }])
    // the raw database under the collections: same prefix, same JSON text
    const raw = (store as unknown as { db: { getSync: (k: string, o: object) => string | undefined } }).db
    expect(raw.getSync('!tokens!by-batch', { valueEncoding: 'utf8' })).to.equal(raw.getSync('!tokens!by-put', { valueEncoding: 'utf8' }))
    expect(await store.collection('tokens').get('by-batch')).to.deep.equal(value)
    expect(await store.collection('owner-index').get('by-batch')).to.equal(7)
    const keys: string[] = []
    for await (const k of store.collection('tokens').keys()) keys.push(k)
    expect(keys).to.deep.equal(['by-batch', 'by-put'])
    try {
      await store.batch([{ type: 'del', collection: 'tokens', key: 'by-put' }, { type: 'put', collection: 'tokens', key: 'x', value: undefined }])
      expect.fail('should throw')
    } catch (e) { expect((e as { code?: string }).code).to.equal('LEVEL_INVALID_VALUE') }
    expect(await store.collection('tokens').get('by-put'), 'nothing of the refused batch landed').to.deep.equal(value)
    expect(store.writeFault, 'a refused value is not a storage fault').to.equal(undefined)
  })

  it('counts the bytes of keys and JSON values its batches hand to LevelDB (a refused batch counts nothing)', async () => {
    expect(store.writtenBytes).to.equal(0)
    await store.batch([{ type: 'put', collection: 'tokens', key: 't1', value: { a: 'bc' } }, { type: 'del', collection: 'blocks', key: 'k' }])
    // '!tokens!t1' + '{"a":"bc"}', then '!blocks!k'
    expect(store.writtenBytes).to.equal(10 + 10 + 9)
    await store.batch([{ type: 'put', collection: 'tokens', key: 'x', value: undefined }]).catch(() => {})
    expect(store.writtenBytes).to.equal(29)
  })

  it('reads from a collection just created, and sees every write at once (reads are synchronous once open)', async () => {
    const fresh = store.collection<{ n: number }>('fresh')
    expect(await fresh.get('a')).to.equal(undefined)
    expect(await fresh.getMany(['a', 'b'])).to.deep.equal([undefined, undefined])
    await store.batch([{ type: 'put', collection: 'fresh', key: 'a', value: { n: 1 } }])
    const [one, many] = await Promise.all([fresh.get('a'), fresh.getMany(['b', 'a'])])
    expect(one).to.deep.equal({ n: 1 })
    expect(many).to.deep.equal([undefined, { n: 1 }])
    await store.batch([{ type: 'del', collection: 'fresh', key: 'a' }])
    expect(await fresh.get('a')).to.equal(undefined)
    await store.close()
    try {
      await fresh.get('a')
      expect.fail('a closed store must refuse reads')
    } catch (e) { expect((e as Error).message).to.match(/not open/i) }
    await store.open()
  })

  it('iterates ranges and prefixes in key order, isolated per collection', async () => {
    const c = store.collection<number>('blocks')
    await store.batch(['a/2', 'a/1', 'b/1', 'a/3'].map((k, i) => ({ type: 'put' as const, collection: 'blocks', key: k, value: i })))
    await store.collection('other').put('a/9', 9)
    const keys: string[] = []
    for await (const k of c.keys({ prefix: 'a/' })) keys.push(k)
    expect(keys).to.deep.equal(['a/1', 'a/2', 'a/3'])
    expect(await c.count({ prefix: 'a/' })).to.equal(3)
    const rev: string[] = []
    for await (const [k] of c.entries({ prefix: 'a/', reverse: true, limit: 2 })) rev.push(k)
    expect(rev).to.deep.equal(['a/3', 'a/2'])
    expect(await c.get('missing')).to.equal(undefined)
  })

  it('scans past the chunks LevelDB is read in, and a scan left early lets the store close', async () => {
    const c = store.collection<number>('many')
    const n = 2345 // past the first chunk (100) and a full one (1000)
    await store.batch(Array.from({ length: n }, (_, i) => ({ type: 'put' as const, collection: 'many', key: String(i).padStart(5, '0'), value: i })))
    const seen: number[] = []
    for await (const [, v] of c.entries()) seen.push(v)
    expect(seen).to.deep.equal(Array.from({ length: n }, (_, i) => i))
    expect(await c.count()).to.equal(n)
    expect(await c.count({ gte: '00100', lt: '01100' })).to.equal(1000)
    const rev: string[] = []
    for await (const k of c.keys({ reverse: true, limit: 150 })) rev.push(k)
    expect(rev).to.have.length(150)
    expect(rev[0]).to.equal('02344')
    expect(rev[149]).to.equal('02195')
    // stopping after one entry of a many-entry scan
    for await (const [k] of c.entries({ gte: '00500' })) { expect(k).to.equal('00500'); break }
    await store.close()
    await store.open()
    expect(await store.collection<number>('many').count()).to.equal(n)
  })

  it('reports the records LevelDB dropped from a damaged log while opening', async () => {
    for (let i = 0; i < 20; i++) await store.batch([{ type: 'put', collection: 'notes', key: `k${i}`, value: 'v'.repeat(3000) }])
    await store.close()
    const db = join(dir, 'db')
    const log = join(db, readdirSync(db).find((n) => n.endsWith('.log'))!)
    const bytes = readFileSync(log)
    bytes.fill(0x33, 20_000, 20_100)
    writeFileSync(log, bytes)
    const events: StoreEvent[] = []
    store = new LevelStore(db, { onEvent: (e) => events.push(e) })
    await store.open()
    expect(await store.collection('notes').count()).to.be.below(20)
    const loss = events.find((e) => e.kind === 'recovered-with-loss')
    expect(loss, 'the open must report what it dropped').not.to.equal(undefined)
    expect((loss as { notes: string[] }).notes.join('\n')).to.match(/dropping \d+ bytes/)
  })

  it('refuses a second opener with a clear message', async () => {
    const other = new LevelStore(join(dir, 'db'))
    try {
      await other.open()
      expect.fail('should throw')
    } catch (e) {
      expect(e).to.be.instanceOf(RbtError)
      expect((e as Error).message).to.match(/in use by another process/)
    }
  })
})

describe('storage: NodeConfigStore', () => {
  it('seeds bootstrap once and persists updates', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbtnode-ncfg-'))
    try {
      const a = new NodeConfigStore(join(dir, 'node.json'))
      await a.open(['/ip4/1.1.1.1/tcp/1'])
      await a.update((d) => { d.bootstrap.push('/ip4/2.2.2.2/tcp/2'); d.peers.x = { peerId: 'p', updatedAt: 1 } })
      await Promise.all([1, 2, 3].map(async (i) => { await a.update((d) => { d.settings['k' + i] = i }) }))
      const b = new NodeConfigStore(join(dir, 'node.json'))
      await b.open(['/ip4/9.9.9.9/tcp/9'])
      expect(b.data.bootstrap).to.deep.equal(['/ip4/1.1.1.1/tcp/1', '/ip4/2.2.2.2/tcp/2'])
      expect(b.data.peers.x.peerId).to.equal('p')
      expect(b.data.settings).to.include({ k1: 1, k2: 2, k3: 3 })
    } finally { rmSync(dir, { recursive: true, force: true }) }
  })

  it('refuses a node.json left empty or cut short by a crash, naming the fix, and clears temporary files a crash left', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbtnode-ncfg-'))
    try {
      const path = join(dir, 'node.json')
      writeFileSync(`${path}.tmp-1-dead`, '{"half')
      const a = new NodeConfigStore(path)
      await a.open(['/ip4/1.1.1.1/tcp/1'])
      expect(readdirSync(dir)).to.deep.equal(['node.json'])
      for (const text of ['', readFileSync(path, 'utf8').slice(0, 10)]) {
        writeFileSync(path, text)
        try {
          await new NodeConfigStore(path).open()
          expect.fail('a damaged node.json must stop the start')
        } catch (e) {
          expect(e).to.be.instanceOf(RbtError)
          expect((e as Error).message).to.match(/node\.json is damaged .*restore it from a backup, or move it away/)
        }
      }
    } finally { rmSync(dir, { recursive: true, force: true }) }
  })
})
