import { expect } from 'chai'
import { mkdtempSync, readdirSync, rmSync, statSync, truncateSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../../src/storage/level-store.js'
import { runCli } from '../helpers/cli.js'

describe('cli: repair (local, no node)', function () {
  this.timeout(60_000)
  let work = ''
  afterEach(() => { rmSync(work, { recursive: true, force: true }) })

  it('repairs a database whose MANIFEST was cut, prints the report, and refuses a data dir without a database', async () => {
    work = mkdtempSync(join(tmpdir(), 'rbtnode-repair-cli-'))
    const db = join(work, 'Rubix', 'TestNet', 'db')
    for (let round = 0; round < 2; round++) {
      const store = new LevelStore(db)
      await store.open()
      await store.batch([{ type: 'put', collection: 'notes', key: `k${round}`, value: round }])
      await store.close()
    }
    const manifest = join(db, readdirSync(db).filter((n) => n.startsWith('MANIFEST-')).sort().at(-1)!)
    truncateSync(manifest, Math.floor(statSync(manifest).size / 2))

    const r = await runCli(['repair', '-p', work, '-testNet'])
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout).to.match(/did not open: Corruption/)
    expect(r.stdout).to.match(/nothing found missing/)
    const store = new LevelStore(db)
    await store.open()
    expect(await store.collection('notes').get('k0')).to.equal(0)
    expect(await store.collection('notes').get('k1')).to.equal(1)
    await store.close()

    const none = await runCli(['repair', '-p', work])
    expect(none.code).to.equal(1)
    expect(none.stderr).to.match(/no database at .*MainNet.*-testNet/)
  })
})
