import { createTableSql, type Table } from '../schema.js'
import type { Dialect } from '../db-types.js'
import * as m0001 from './0001-initial.js'
import * as m0002 from './0002-asset-states.js'

/** A schema migration: ordered by id, applied once, recorded in explorer_migrations. */
export interface Migration { id: number, name: string, tables: Table[], statements: (d: Dialect) => string[] }

export const migrations: Migration[] = [
  { id: 1, name: 'initial', tables: m0001.tables, statements: (d) => m0001.tables.flatMap((t) => createTableSql(d, t)) },
  { id: 2, name: 'asset states', tables: m0002.tables, statements: (d) => m0002.tables.flatMap((t) => createTableSql(d, t)) }
]

/** Every table of the current schema by name (the union of all migrations). */
export function currentTables (): Map<string, Table> {
  const out = new Map<string, Table>()
  for (const m of migrations) for (const t of m.tables) out.set(t.name, t)
  return out
}
