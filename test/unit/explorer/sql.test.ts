import { expect } from 'chai'
import type BetterSqlite3 from 'better-sqlite3'
import { parseDbType, SUPPORTED_DB_TYPES } from '../../../src/node/explorer/db-types.js'
import { currentTables, migrations } from '../../../src/node/explorer/migrations/index.js'
import { createMigrationsTableSql } from '../../../src/node/explorer/schema.js'
import { migrate, placeholders, upsertSql } from '../../../src/node/explorer/sql.js'
import { loadSqlite, openConnection } from '../../../src/node/explorer/drivers.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RbtError } from '../../../src/util/errors.js'

describe('explorer: database types, schema and SQL', () => {
  // the driver's own better-sqlite3 (12 or 13 by the Node line), the only SQLite this process loads
  let Database: typeof BetterSqlite3
  before(async () => { Database = (await loadSqlite()).Database })

  it('accepts the three database types with their usual spellings', () => {
    expect(parseDbType('SQLServer')).to.equal('sqlserver')
    expect(parseDbType('mssql')).to.equal('sqlserver')
    expect(parseDbType('PostgreSQL')).to.equal('postgres')
    expect(parseDbType('postgres')).to.equal('postgres')
    expect(parseDbType('SQLite')).to.equal('sqlite')
    expect(parseDbType('sqlite3')).to.equal('sqlite')
  })

  it('refuses any other type with a message listing the supported ones', () => {
    try {
      parseDbType('MySQL')
      expect.fail('should throw')
    } catch (e) {
      expect(e).to.be.instanceOf(RbtError)
      expect((e as RbtError).code).to.equal('INVALID_INPUT')
      expect((e as Error).message).to.equal(`unsupported database type "MySQL": supported types are ${SUPPORTED_DB_TYPES}`)
      expect(SUPPORTED_DB_TYPES).to.equal('SQLite, PostgreSQL, SQLServer')
    }
  })

  it('rewrites placeholders per dialect', () => {
    expect(placeholders('sqlite', 'a = ? AND b = ?')).to.equal('a = ? AND b = ?')
    expect(placeholders('postgres', 'a = ? AND b = ?')).to.equal('a = $1 AND b = $2')
    expect(placeholders('sqlserver', 'a = ? AND b = ?')).to.equal('a = @p1 AND b = @p2')
  })

  it('builds upserts keyed by the primary key (ON CONFLICT, and MERGE for SQL Server)', () => {
    const t = currentTables().get('explorer_tx_tokens')!
    expect(upsertSql('postgres', t)).to.equal('INSERT INTO "explorer_tx_tokens" ("tx_id", "token_id") VALUES (?, ?) ON CONFLICT ("tx_id", "token_id") DO NOTHING')
    const dids = currentTables().get('explorer_dids')!
    expect(upsertSql('sqlite', dids)).to.equal('INSERT INTO "explorer_dids" ("did", "did_type", "created_at") VALUES (?, ?, ?) ON CONFLICT ("did") DO UPDATE SET "did_type" = excluded."did_type", "created_at" = excluded."created_at"')
    expect(upsertSql('sqlserver', dids)).to.equal(
      'MERGE INTO [explorer_dids] WITH (HOLDLOCK) AS tgt USING (VALUES (?, ?, ?)) AS src ([did], [did_type], [created_at]) ON tgt.[did] = src.[did]' +
      ' WHEN MATCHED THEN UPDATE SET [did_type] = src.[did_type], [created_at] = src.[created_at]' +
      ' WHEN NOT MATCHED THEN INSERT ([did], [did_type], [created_at]) VALUES (src.[did], src.[did_type], src.[created_at]);')
    expect(upsertSql('sqlserver', t)).to.not.include('WHEN MATCHED')
  })

  it('renders SQL Server DDL with bounded key columns (indexable) and an idempotent bookkeeping table', () => {
    const ddl = migrations[0]!.statements('sqlserver')
    const tokens = ddl.find((s) => s.startsWith('CREATE TABLE [explorer_tokens]'))!
    expect(tokens).to.include('[token_id] NVARCHAR(256) NOT NULL')
    expect(tokens).to.include('[value_milli] BIGINT NOT NULL')
    expect(tokens).to.include('CONSTRAINT [pk_explorer_tokens] PRIMARY KEY ([token_id])')
    expect(ddl.find((s) => s.startsWith('CREATE TABLE [explorer_transactions]'))).to.include('[memo] NVARCHAR(MAX) NULL')
    expect(ddl).to.include('CREATE INDEX [ix_explorer_tokens_owner] ON [explorer_tokens] ([owner])')
    expect(createMigrationsTableSql('sqlserver')).to.match(/^IF OBJECT_ID\(N'explorer_migrations', N'U'\) IS NULL\nCREATE TABLE \[explorer_migrations\]/)
    // no dialect-foreign syntax leaks into the SQL Server statements
    for (const s of ddl) expect(s).to.not.match(/IF NOT EXISTS|"|TEXT\b/)
  })

  it('the SQLite and PostgreSQL DDL creates every table with the declared columns', () => {
    const db = new Database(':memory:')
    db.exec(createMigrationsTableSql('sqlite'))
    for (const m of migrations) for (const s of m.statements('sqlite')) db.exec(s)
    for (const [name, t] of currentTables()) {
      const cols = (db.prepare(`PRAGMA table_info("${name}")`).all() as Array<{ name: string, pk: number }>)
      expect(cols.map((c) => c.name), name).to.deep.equal(t.columns.map((c) => c.name))
      expect(cols.filter((c) => c.pk > 0).map((c) => c.name), name).to.have.members(t.primaryKey)
    }
    db.close()
    const pg = migrations[0]!.statements('postgres').join(';\n')
    expect(pg).to.include('"epoch" BIGINT NOT NULL')
    expect(pg).to.not.include('NVARCHAR')
  })
  it('a database at migration 1 gains the asset state tables through migration 2; applying again changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbtnode-migrate-'))
    const file = join(dir, 'x.sqlite')
    try {
      // a database created by a node that only knew migration 1, with a row in it
      const old = new Database(file)
      old.exec(createMigrationsTableSql('sqlite'))
      for (const st of migrations[0]!.statements('sqlite')) old.exec(st)
      old.prepare('INSERT INTO explorer_migrations (id, name, applied_at) VALUES (1, ?, 1)').run('initial')
      old.prepare('INSERT INTO explorer_sync_state (name, value, updated_at) VALUES (?, ?, ?)').run('kept', 'yes', 1)
      old.close()
      const conn = await openConnection({ dialect: 'sqlite', address: '', name: file, username: '', password: '' })
      try {
        expect(await migrate(conn)).to.deep.equal([2])
        expect(await migrate(conn)).to.deep.equal([])
        const cols = await conn.query<{ name: string }>('PRAGMA table_info("explorer_nft_states")')
        expect(cols.map((c) => c.name)).to.deep.equal(['token_id', 'block_number', 'block_id', 'tx_id', 'tx_type', 'initiator', 'owner', 'data', 'value_milli', 'epoch'])
        expect(await conn.query('SELECT name FROM sqlite_master WHERE name = \'explorer_contract_states\'')).to.have.length(1)
        expect(await conn.query('SELECT value FROM explorer_sync_state WHERE name = \'kept\'')).to.deep.equal([{ value: 'yes' }])
      } finally { await conn.close() }
    } finally { rmSync(dir, { recursive: true, force: true }) }
  })
})
