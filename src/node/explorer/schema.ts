import type { Dialect } from './db-types.js'

/**
 * The explorer's relational schema, described once and rendered per dialect. Column kinds:
 * `key` short text that may be indexed (DIDs, token ids, block ids, statuses), `text` unbounded
 * text (memos, JSON lists), `int` 32-bit and `bigint` 64-bit integers. Amounts and values are
 * integer milli-RBT (`*_milli`), exactly as the node stores them; times are Unix milliseconds
 * except transaction and block `epoch`, which are Unix seconds as in the node's API.
 */
export type ColumnKind = 'key' | 'text' | 'int' | 'bigint'

export interface Column { name: string, kind: ColumnKind, nullable?: boolean }
export interface Table { name: string, columns: Column[], primaryKey: string[], indexes?: string[][] }

const c = (name: string, kind: ColumnKind, nullable = false): Column => ({ name, kind, nullable })

const TYPES: Record<Dialect, Record<ColumnKind, string>> = {
  sqlite: { key: 'TEXT', text: 'TEXT', int: 'INTEGER', bigint: 'INTEGER' },
  postgres: { key: 'TEXT', text: 'TEXT', int: 'INTEGER', bigint: 'BIGINT' },
  // SQL Server cannot index NVARCHAR(MAX): keys get a bounded length
  sqlserver: { key: 'NVARCHAR(256)', text: 'NVARCHAR(MAX)', int: 'INT', bigint: 'BIGINT' }
}

export const quoteIdent = (d: Dialect, name: string): string => d === 'sqlserver' ? `[${name}]` : `"${name}"`

export function createTableSql (d: Dialect, t: Table): string[] {
  const cols = t.columns.map((col) => `  ${quoteIdent(d, col.name)} ${TYPES[d][col.kind]}${col.nullable === true ? ' NULL' : ' NOT NULL'}`)
  cols.push(`  CONSTRAINT ${quoteIdent(d, `pk_${t.name}`)} PRIMARY KEY (${t.primaryKey.map((k) => quoteIdent(d, k)).join(', ')})`)
  const out = [`CREATE TABLE ${quoteIdent(d, t.name)} (\n${cols.join(',\n')}\n)`]
  for (const ix of t.indexes ?? []) {
    out.push(`CREATE INDEX ${quoteIdent(d, `ix_${t.name}_${ix.join('_')}`)} ON ${quoteIdent(d, t.name)} (${ix.map((k) => quoteIdent(d, k)).join(', ')})`)
  }
  return out
}

/** The bookkeeping table of applied migrations; created before any migration runs. */
export const MIGRATIONS_TABLE: Table = {
  name: 'explorer_migrations',
  columns: [c('id', 'int'), c('name', 'key'), c('applied_at', 'bigint')],
  primaryKey: ['id']
}

export function createMigrationsTableSql (d: Dialect): string {
  const [create] = createTableSql(d, MIGRATIONS_TABLE)
  if (d === 'sqlserver') return `IF OBJECT_ID(N'explorer_migrations', N'U') IS NULL\n${create!}`
  return create!.replace(/^CREATE TABLE/, 'CREATE TABLE IF NOT EXISTS')
}

export { c as column }
