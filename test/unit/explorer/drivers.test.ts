import { expect } from 'chai'
import { createRequire } from 'node:module'
import { loadSqlite, sqliteModule } from '../../../src/node/explorer/drivers.js'
import { runProcess } from '../../helpers/cli.js'

const require = createRequire(import.meta.url)
const [major, minor] = process.versions.node.split('.').map(Number) as [number, number]
// better-sqlite3 13 needs N-API 10: Node 22.14 and later on the 22 line, every 24
const expected = major > 22 || (major === 22 && minor >= 14) ? 13 : 12

describe('explorer: the SQLite driver loads the better-sqlite3 of its Node line', () => {
  it('chooses 13 (the better-sqlite3-napi alias) where Node has N-API 10, else 12', () => {
    expect(sqliteModule('9')).to.equal('better-sqlite3') // Node 20, 22.12-22.13
    expect(sqliteModule('10')).to.equal('better-sqlite3-napi') // Node 22.14 and later, 24
  })

  it(`loads better-sqlite3 ${expected} on Node ${process.versions.node}, and it opens a database`, async () => {
    const { Database, module } = await loadSqlite()
    const pkg = require(`${module}/package.json`) as { name: string, version: string }
    expect(pkg.name).to.equal('better-sqlite3')
    expect(Number(pkg.version.split('.')[0]), `${module} ${pkg.version}`).to.equal(expected)
    expect(Database).to.equal(require(module))
    const db = new Database(':memory:')
    try {
      expect(db.prepare('SELECT 7 AS x').get()).to.deep.equal({ x: 7 })
    } finally { db.close() }
  })

  it('survives the garbage collection of 20,000 prepared statements (12 built for Node 24.19 and later aborted here)', async function () {
    this.timeout(60_000)
    const { module } = await loadSqlite()
    const script = [
      `const Database = require(${JSON.stringify(require.resolve(module))})`,
      "const db = new Database(':memory:')",
      "for (let i = 0; i < 20000; i++) db.prepare('SELECT ' + i + ' AS y').get()",
      "db.close(); console.log('ok')"
    ].join('\n')
    const r = await runProcess(process.execPath, ['-e', script], { timeoutMs: 60_000 })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout.trim()).to.equal('ok')
  })
})
