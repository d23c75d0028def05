import { expect } from 'chai'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../../../src/storage/level-store.js'
import { NodeConfigStore } from '../../../src/storage/node-config-store.js'
import { TokenLedger } from '../../../src/storage/token-ledger.js'
import { sha3Hex } from '../../../src/tokenchain/hash.js'
import { silentLogger } from '../../../src/util/logger.js'
import { RbtError } from '../../../src/util/errors.js'
import { httpStatusOf } from '../../../src/api/server/errors.js'
import { QuorumRegistry } from '../../../src/node/consensus/quorum-registry.js'
import { kvExplorerSource } from '../../../src/node/explorer/explorer-sync.js'
import { ExplorerService } from '../../../src/node/explorer/explorer-service.js'
import { connectFailureMessage } from '../../../src/node/explorer/drivers.js'
import { waitFor } from '../../helpers/wait.js'

describe('explorer service: where it may write, what it reports', function () {
  this.timeout(20_000)
  let base = ''
  let dir = ''
  let store: LevelStore
  let config: NodeConfigStore
  let service: ExplorerService | undefined

  beforeEach(async () => {
    base = mkdtempSync(join(tmpdir(), 'rbtnode-explorer-svc-'))
    dir = join(base, 'Rubix', 'TestNet')
    mkdirSync(dir, { recursive: true })
    store = new LevelStore(join(dir, 'db'))
    await store.open()
    config = new NodeConfigStore(join(dir, 'node.json'))
    await config.open()
  })
  afterEach(async () => { await service?.stop(); service = undefined; await store.close(); rmSync(base, { recursive: true, force: true }) })

  const make = (): ExplorerService => new ExplorerService({
    config,
    sealer: new QuorumRegistry(config, store, join(dir, 'quorum.secret')),
    root: dir,
    source: kvExplorerSource(store, async () => []),
    ledger: new TokenLedger(store, sha3Hex),
    log: silentLogger,
    sync: { backoff: { initialMs: 20, maxMs: 50 }, pollMs: 50 }
  })

  const refused = async (input: { db_name: string }): Promise<RbtError> => {
    try {
      await service!.setup({ db_type: 'SQLite', ...input })
    } catch (e) {
      expect(e).to.be.instanceOf(RbtError)
      expect(httpStatusOf((e as RbtError).code)).to.equal(400)
      return e as RbtError
    }
    return expect.fail(`db_name ${input.db_name} should be refused`)
  }

  it('a SQLite database is a plain file name inside the data directory; paths and the node\'s own files are refused', async () => {
    service = make()
    writeFileSync(join(base, 'victim.db'), '')
    const outside = join(base, 'outside.sqlite')
    for (const name of [outside, '/tmp/x.db', '../outside.sqlite', '../../outside.sqlite', 'sub/x.db', 'sub\\x.db', '.hidden.db', '..', 'a..b', 'x:y', '', ' ', 'a'.repeat(200)]) {
      const e = await refused({ db_name: name })
      if (name.trim() !== '') expect(e.message).to.match(/plain file name/)
    }
    for (const name of ['node.json', 'NODE.JSON', 'db', 'peer.key', 'quorum.secret', 'PledgedTokens.json', 'dids', 'explorer.sqlite-wal']) {
      expect((await refused({ db_name: name })).message).to.match(/the node uses itself/)
    }
    // an existing file that is not a SQLite database is never opened as one
    writeFileSync(join(dir, 'notes.db'), 'not a database')
    expect((await refused({ db_name: 'notes.db' })).message).to.match(/not a SQLite database/)
    expect(readFileSync(join(dir, 'notes.db'), 'utf8')).to.equal('not a database')
    expect(existsSync(outside)).to.equal(false)
    expect(readFileSync(join(base, 'victim.db'), 'utf8')).to.equal('')
    expect(service.config()).to.equal(null)

    for (const name of ['explorer.sqlite', 'ExplorerDB', 'my_explorer-2.db']) {
      const view = await service.setup({ db_type: 'SQLite', db_name: name })
      expect(view.db_name).to.equal(join(dir, name))
    }
    await waitFor(() => service!.status().state === 'in_sync', { what: 'the explorer to be in sync' })
    expect(readdirSync(base).sort()).to.deep.equal(['Rubix', 'victim.db'])
  })

  it('a saved configuration naming a file outside the data directory is not opened', async () => {
    const outside = join(base, 'saved-outside.sqlite')
    await config.update((d) => { d.settings.services = { explorer_service: { dialect: 'sqlite', address: 'localhost', name: outside, username: 'sa', updatedAt: 1 } } })
    service = make()
    service.open()
    expect(service.status().state).to.equal('not_configured')
    expect(existsSync(outside)).to.equal(false)
    // one saved before the plain-name rule, inside the data directory, still works
    await config.update((d) => { d.settings.services = { explorer_service: { dialect: 'sqlite', address: 'localhost', name: join(dir, 'old.sqlite'), username: 'sa', updatedAt: 1 } } })
    await service.stop()
    service = make()
    service.open()
    await waitFor(() => service!.status().state === 'in_sync', { what: 'the explorer to be in sync' })
    expect(existsSync(join(dir, 'old.sqlite'))).to.equal(true)
  })

  describe('connection failures do not tell closed, open or other services apart', () => {
    const servers: Server[] = []
    const sockets = new Set<Socket>()
    afterEach(async () => {
      for (const s of sockets) s.destroy()
      sockets.clear()
      await Promise.all(servers.splice(0).map(async (s) => await new Promise((resolve) => s.close(resolve))))
    })
    const tcp = async (onConnect: (s: Socket) => void): Promise<number> => {
      const srv = createServer((s) => { sockets.add(s); s.on('error', () => {}); onConnect(s) })
      servers.push(srv)
      await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
      return (srv.address() as { port: number }).port
    }
    const closedPort = async (): Promise<number> => {
      const p = await tcp(() => {})
      await new Promise((resolve) => servers.pop()!.close(resolve))
      return p
    }
    const lastErrorFor = async (dbType: string, port: number): Promise<string> => {
      await service?.stop()
      service = make()
      await service.setup({ db_type: dbType, db_address: '127.0.0.1', db_port: port, db_name: 'x', db_username: 'u', db_password: 'p' })
      const status = await waitFor(() => { const s = service!.status(); return s.retries >= 1 && s.last_error !== null ? s : undefined }, { timeoutMs: 15_000, what: 'a failed connection' })
      return status.last_error!
    }

    for (const dbType of ['PostgreSQL', 'SQLServer']) {
      it(`${dbType}: a closed port, a port that hangs up and a port that answers another protocol give the same last_error`, async () => {
        const closed = await closedPort()
        const hangsUp = await tcp((s) => { s.destroy() })
        const http = await tcp((s) => { s.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n') })
        const errors = [await lastErrorFor(dbType, closed), await lastErrorFor(dbType, hangsUp), await lastErrorFor(dbType, http)]
        expect(errors).to.deep.equal(Array(3).fill('could not connect to the configured database: connection refused or timed out'))
      })
    }

    it('classifies what the database server itself reports; socket and TLS details are dropped', () => {
      const pgAuth = Object.assign(new Error('password authentication failed for user "u"'), { code: '28P01', severity: 'FATAL' })
      expect(connectFailureMessage(pgAuth)).to.equal('could not connect to the configured database: authentication failed')
      expect(connectFailureMessage(Object.assign(new Error('sorry, too many clients'), { code: '53300', severity: 'FATAL' }))).to.equal('could not connect to the configured database: the database server refused the request (SQLSTATE 53300)')
      expect(connectFailureMessage(Object.assign(new Error('Login failed for user'), { code: 'ELOGIN' }))).to.equal('could not connect to the configured database: authentication failed')
      for (const e of [
        Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' }),
        Object.assign(new Error('connect ETIMEDOUT 10.0.0.5:5432'), { code: 'ETIMEDOUT' }),
        Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }),
        new Error('Connection terminated due to connection timeout'),
        new Error('The server does not support SSL connections'),
        Object.assign(new Error('Failed to connect to 10.0.0.5:1433 - self-signed certificate'), { code: 'ESOCKET' }),
        'not even an error'
      ]) expect(connectFailureMessage(e)).to.equal('could not connect to the configured database: connection refused or timed out')
    })
  })
})
