import type { Dialect } from './db-types.js'
import { createMigrationsTableSql, quoteIdent, type Table } from './schema.js'
import { migrations } from './migrations/index.js'

export type SqlValue = string | number | null

/**
 * The little the explorer needs of a database connection; one adapter per driver (drivers.ts).
 * Statements use `?` placeholders; adapters rewrite them to the driver's own form.
 */
export interface SqlConn {
  readonly dialect: Dialect
  exec: (sql: string, params?: SqlValue[]) => Promise<void>
  query: <T = Record<string, unknown>>(sql: string, params?: SqlValue[]) => Promise<T[]>
  /** Runs `fn` in one database transaction: committed when it resolves, rolled back when it throws. */
  transaction: <T>(fn: (tx: SqlConn) => Promise<T>) => Promise<T>
  close: () => Promise<void>
}

/** `?` → `$1, $2, …` (PostgreSQL) or `@p1, @p2, …` (SQL Server). Statements here never hold a literal `?`. */
export function placeholders (d: Dialect, sql: string): string {
  if (d === 'sqlite') return sql
  let i = 0
  return sql.replace(/\?/g, () => d === 'postgres' ? `$${++i}` : `@p${++i}`)
}

/** An idempotent insert-or-update of one row keyed by the table's primary key. */
export function upsertSql (d: Dialect, t: Table): string {
  const q = (n: string): string => quoteIdent(d, n)
  const names = t.columns.map((col) => col.name)
  const rest = names.filter((n) => !t.primaryKey.includes(n))
  const marks = names.map(() => '?').join(', ')
  if (d === 'sqlserver') {
    const on = t.primaryKey.map((k) => `tgt.${q(k)} = src.${q(k)}`).join(' AND ')
    const set = rest.map((n) => `${q(n)} = src.${q(n)}`).join(', ')
    return `MERGE INTO ${q(t.name)} WITH (HOLDLOCK) AS tgt USING (VALUES (${marks})) AS src (${names.map(q).join(', ')}) ON ${on}` +
      (rest.length > 0 ? ` WHEN MATCHED THEN UPDATE SET ${set}` : '') +
      ` WHEN NOT MATCHED THEN INSERT (${names.map(q).join(', ')}) VALUES (${names.map((n) => `src.${q(n)}`).join(', ')});`
  }
  const conflict = rest.length > 0
    ? `DO UPDATE SET ${rest.map((n) => `${q(n)} = excluded.${q(n)}`).join(', ')}`
    : 'DO NOTHING'
  return `INSERT INTO ${q(t.name)} (${names.map(q).join(', ')}) VALUES (${marks}) ON CONFLICT (${t.primaryKey.map(q).join(', ')}) ${conflict}`
}

export function deleteWhereSql (d: Dialect, table: string, column: string): string {
  return `DELETE FROM ${quoteIdent(d, table)} WHERE ${quoteIdent(d, column)} = ?`
}

/** Values of `row` in the table's column order (absent → NULL). */
export function rowValues (t: Table, row: Record<string, SqlValue | undefined>): SqlValue[] {
  return t.columns.map((col) => row[col.name] ?? null)
}

/** Applies the migrations not applied yet, each in its own transaction. Returns the ids applied now. */
export async function migrate (conn: SqlConn): Promise<number[]> {
  const d = conn.dialect
  await conn.exec(createMigrationsTableSql(d))
  const done = new Set((await conn.query<{ id: number | string }>(`SELECT ${quoteIdent(d, 'id')} FROM ${quoteIdent(d, 'explorer_migrations')}`)).map((r) => Number(r.id)))
  const applied: number[] = []
  for (const m of migrations) {
    if (done.has(m.id)) continue
    await conn.transaction(async (tx) => {
      for (const s of m.statements(d)) await tx.exec(s)
      await tx.exec(`INSERT INTO ${quoteIdent(d, 'explorer_migrations')} (${['id', 'name', 'applied_at'].map((n) => quoteIdent(d, n)).join(', ')}) VALUES (?, ?, ?)`, [m.id, m.name, Date.now()])
    })
    applied.push(m.id)
  }
  return applied
}
