import { ErrorCode, RbtError } from '../../util/errors.js'

/**
 * Database types the explorer service can write to. The names operators pass with -dbType are
 * matched case-insensitively, with the usual aliases.
 */
export type Dialect = 'sqlite' | 'postgres' | 'sqlserver'

/** The canonical -dbType spelling of each dialect (what status and errors show). */
export const DIALECT_NAMES: Record<Dialect, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL', sqlserver: 'SQLServer' }

const ALIASES: Record<string, Dialect> = {
  sqlite: 'sqlite',
  sqlite3: 'sqlite',
  postgresql: 'postgres',
  postgres: 'postgres',
  pg: 'postgres',
  sqlserver: 'sqlserver',
  mssql: 'sqlserver'
}

export const SUPPORTED_DB_TYPES = Object.values(DIALECT_NAMES).join(', ')

export function parseDbType (input: string): Dialect {
  const d = ALIASES[input.trim().toLowerCase().replace(/[\s_-]/g, '')]
  if (d === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `unsupported database type "${input}": supported types are ${SUPPORTED_DB_TYPES}`)
  return d
}

export const EXPLORER_SERVICE = 'explorer_service'

/** Port used when none is given: the SPEC default 1433 for SQL Server, PostgreSQL's own otherwise. */
export const defaultPort = (d: Dialect): number | undefined => d === 'sqlserver' ? 1433 : d === 'postgres' ? 5432 : undefined
