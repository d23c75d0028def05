import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { defaultPort, type Dialect } from './db-types.js'
import { placeholders, type SqlConn, type SqlValue } from './sql.js'

/** Where the explorer writes. For SQLite `name` is the database file (absolute path). */
export interface DbTarget {
  dialect: Dialect
  address: string
  port?: number
  name: string
  username: string
  password: string
}

/**
 * Opens a connection through the dialect's driver. Drivers are imported here, on first use, so
 * a node that never configures the explorer never loads them.
 */
export async function openConnection (t: DbTarget): Promise<SqlConn> {
  switch (t.dialect) {
    case 'sqlite': return await openSqlite(t)
    case 'postgres': return await openPostgres(t)
    case 'sqlserver': return await openSqlServer(t)
  }
}

/** The two better-sqlite3 packages the SQLite driver may load; the second is an npm alias of 13. */
export type SqliteModule = 'better-sqlite3' | 'better-sqlite3-napi'
type SqliteConstructor = typeof import('better-sqlite3')

/**
 * Which better-sqlite3 this Node loads (docs/decisions/0016-sqlite-driver-per-node-line.md): 13,
 * installed as the optional dependency `better-sqlite3-napi`, where Node offers N-API 10 (22.14 and
 * later, 24); 12 on Node 20 and on 22.12-22.13. 13 is an N-API binary shipped in its package, with
 * no node::ObjectWrap: 12 compiled against Node 24.19 or later headers aborts the process when a
 * statement is garbage-collected outside a V8 context. 13 needs N-API 10: on Node 20 and 22.12 it
 * crashes (SIGSEGV) on the first open, so it is never tried there.
 */
export function sqliteModule (napi: string | undefined = process.versions.napi): SqliteModule {
  return Number(napi ?? 0) >= 10 ? 'better-sqlite3-napi' : 'better-sqlite3'
}

let sqlite: Promise<{ Database: SqliteConstructor, module: SqliteModule }> | undefined

/**
 * better-sqlite3's constructor for this process, and the package it came from: sqliteModule()'s
 * choice, or 12 when 13 is not installed (npm skips the optional dependency on Node 20) or cannot
 * open a database here (no binary for this platform). Loaded once: the tests that read the driver's
 * files open them with the same library, since two copies of SQLite in one process must not open
 * one database file (closing a file in one drops the other's POSIX locks on it).
 */
export async function loadSqlite (): Promise<{ Database: SqliteConstructor, module: SqliteModule }> {
  sqlite ??= (async () => {
    const chosen = sqliteModule()
    if (chosen !== 'better-sqlite3') {
      try {
        const Database = (await import(chosen) as { default: SqliteConstructor }).default
        // the binary is loaded on the first open
        new Database(':memory:').close()
        return { Database, module: chosen }
      } catch {}
    }
    return { Database: (await import('better-sqlite3')).default, module: 'better-sqlite3' }
  })()
  return await sqlite
}

async function openSqlite (t: DbTarget): Promise<SqlConn> {
  const { Database } = await loadSqlite()
  mkdirSync(dirname(t.name), { recursive: true })
  const db = new Database(t.name)
  db.pragma('journal_mode = WAL')
  db.pragma('busy_timeout = 5000')
  const stmts = new Map<string, import('better-sqlite3').Statement>()
  const prep = (sql: string): import('better-sqlite3').Statement => {
    let s = stmts.get(sql)
    if (s === undefined) { s = db.prepare(sql); stmts.set(sql, s) }
    return s
  }
  let depth = 0
  const conn: SqlConn = {
    dialect: 'sqlite',
    exec: async (sql, params = []) => {
      if (params.length === 0) db.exec(sql)
      else prep(sql).run(...params)
    },
    query: async <T>(sql: string, params: SqlValue[] = []) => prep(sql).all(...params) as T[],
    transaction: async (fn) => {
      if (depth > 0) return await fn(conn)
      depth++
      db.exec('BEGIN IMMEDIATE')
      try {
        const out = await fn(conn)
        db.exec('COMMIT')
        return out
      } catch (e) {
        if (db.inTransaction) db.exec('ROLLBACK')
        throw e
      } finally { depth-- }
    },
    close: async () => { if (db.open) db.close() }
  }
  return conn
}

async function openPostgres (t: DbTarget): Promise<SqlConn> {
  const pg = (await import('pg')).default
  // BIGINT (oid 20) as a JS number: the explorer's integers stay far below 2^53
  const types = { getTypeParser: ((oid: number, format?: 'text' | 'binary') => oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as never }
  const connect = async (database: string): Promise<import('pg').Client> => {
    const client = new pg.Client({ host: t.address, port: t.port ?? defaultPort('postgres'), user: t.username, password: t.password, database, types, connectionTimeoutMillis: 10_000 })
    // a dropped server connection is reported here; the next statement fails and the service reconnects
    client.on('error', () => {})
    await client.connect()
    return client
  }
  let client: import('pg').Client
  try {
    client = await connect(t.name)
  } catch (e) {
    if ((e as { code?: string }).code !== '3D000') throw e
    // the database does not exist yet: create it from the maintenance database
    const admin = await connect('postgres')
    try { await admin.query(`CREATE DATABASE "${t.name.replace(/"/g, '""')}"`) } finally { await admin.end().catch(() => {}) }
    client = await connect(t.name)
  }
  let depth = 0
  const conn: SqlConn = {
    dialect: 'postgres',
    exec: async (sql, params = []) => { await client.query(placeholders('postgres', sql), params) },
    query: async <T>(sql: string, params: SqlValue[] = []) => (await client.query(placeholders('postgres', sql), params)).rows as T[],
    transaction: async (fn) => {
      if (depth > 0) return await fn(conn)
      depth++
      await client.query('BEGIN')
      try {
        const out = await fn(conn)
        await client.query('COMMIT')
        return out
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {})
        throw e
      } finally { depth-- }
    },
    close: async () => { await client.end().catch(() => {}) }
  }
  return conn
}

async function openSqlServer (t: DbTarget): Promise<SqlConn> {
  const mssql = (await import('mssql')).default
  const connect = async (database: string): Promise<import('mssql').ConnectionPool> => {
    const pool = new mssql.ConnectionPool({
      server: t.address,
      port: t.port ?? defaultPort('sqlserver'),
      user: t.username,
      password: t.password,
      database,
      pool: { max: 2, min: 0 },
      connectionTimeout: 10_000,
      requestTimeout: 30_000,
      options: { encrypt: false, trustServerCertificate: true }
    })
    pool.on('error', () => {})
    await pool.connect()
    return pool
  }
  let pool: import('mssql').ConnectionPool
  try {
    pool = await connect(t.name)
  } catch (e) {
    // 4060: cannot open the database named by the login; create it from master
    const n = (e as { originalError?: { info?: { number?: number } }, number?: number })
    if ((n.number ?? n.originalError?.info?.number) !== 4060) throw e
    const admin = await connect('master')
    try {
      await admin.request().input('name', mssql.NVarChar, t.name).query("IF DB_ID(@name) IS NULL EXEC('CREATE DATABASE ' + QUOTENAME(@name))")
    } finally { await admin.close().catch(() => {}) }
    pool = await connect(t.name)
  }
  const run = async (target: import('mssql').ConnectionPool | import('mssql').Transaction, sql: string, params: SqlValue[]): Promise<Array<Record<string, unknown>>> => {
    const req = new mssql.Request(target as import('mssql').ConnectionPool)
    params.forEach((v, i) => { req.input(`p${i + 1}`, v) })
    const res = await req.query(placeholders('sqlserver', sql))
    return res.recordset ?? []
  }
  const bound = (target: import('mssql').ConnectionPool | import('mssql').Transaction, inTx: boolean): SqlConn => {
    const conn: SqlConn = {
      dialect: 'sqlserver',
      exec: async (sql, params = []) => { await run(target, sql, params) },
      query: async <T>(sql: string, params: SqlValue[] = []) => await run(target, sql, params) as T[],
      transaction: async (fn) => {
        if (inTx) return await fn(conn)
        const tx = new mssql.Transaction(pool)
        await tx.begin()
        try {
          const out = await fn(bound(tx, true))
          await tx.commit()
          return out
        } catch (e) {
          await tx.rollback().catch(() => {})
          throw e
        }
      },
      close: async () => { await pool.close().catch(() => {}) }
    }
    return conn
  }
  return bound(pool, false)
}

/** A readable one-line reason for a failed connection or statement. */
export function dbErrorMessage (e: unknown): string {
  const err = e as { code?: string, message?: string, errors?: Array<{ message?: string }> }
  // AggregateError from a refused connection carries the useful text in its parts
  const inner = err.errors?.map((x) => x.message).filter(Boolean).join('; ')
  const msg = errorMessage(e)
  return inner !== undefined && inner !== '' && (msg === '' || msg === 'AggregateError') ? inner : msg !== '' ? msg : String(err.code ?? 'unknown database error')
}

/**
 * What `last_error` says when a connection to a PostgreSQL or SQL Server database cannot be opened.
 * The configured address may be any host and port, so the answer must not tell an open port from
 * a closed or filtered one, a TLS endpoint or any other service: every failure before the database
 * server answers in its own protocol is "connection refused or timed out". Only errors the database
 * server itself reports are told apart: "authentication failed", else "the database server refused
 * the request" with its stable error code (SQLSTATE or SQL Server error number). Driver and socket
 * messages are never passed on.
 */
export function connectFailureMessage (e: unknown): string {
  return `could not connect to the configured database: ${connectFailureClass(e)}`
}

function connectFailureClass (e: unknown): string {
  const err = (e ?? {}) as { code?: unknown, severity?: unknown, number?: unknown, originalError?: { code?: unknown, number?: unknown, info?: { number?: unknown } } }
  // PostgreSQL: a server-reported error carries a SQLSTATE and a severity
  if (typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code) && typeof err.severity === 'string') {
    return err.code.startsWith('28') ? 'authentication failed' : `the database server refused the request (SQLSTATE ${err.code})`
  }
  // SQL Server (mssql over tedious): ELOGIN is a login the server refused; a number is a server error
  const code = typeof err.code === 'string' ? err.code : typeof err.originalError?.code === 'string' ? err.originalError.code : undefined
  if (code === 'ELOGIN') return 'authentication failed'
  const n = err.number ?? err.originalError?.number ?? err.originalError?.info?.number
  if (typeof n === 'number' && Number.isInteger(n) && n > 0) {
    return n === 18456 ? 'authentication failed' : `the database server refused the request (error ${n})`
  }
  return 'connection refused or timed out'
}

export const storageError = (msg: string, cause?: unknown): RbtError => new RbtError(ErrorCode.STORAGE, msg, { cause })
