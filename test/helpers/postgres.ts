import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { ROOT } from './cli.js'
import { freePort } from './ports.js'

const run = promisify(execFile)
const SCRIPT = join(ROOT, 'test/helpers/postgres-server.sh')

export interface PgServer {
  url: URL
  /** Stops the server at once (immediate shutdown, as a crash). */
  kill: () => Promise<void>
  /** Starts it again. */
  revive: () => Promise<void>
  dispose: () => Promise<void>
}

/**
 * The PostgreSQL server for the explorer tests: the one .ci/run started (RBTNODE_TEST_PG_URL and
 * RBTNODE_TEST_PG_DATA), or a throwaway one started here from the installed server binaries.
 * Returns the reason when there is none; under CI that is an error, not a skip.
 */
export async function testPostgres (): Promise<PgServer | { skip: string }> {
  const ctl = async (cmd: string, data: string): Promise<void> => { await run('bash', [SCRIPT, cmd, data], { timeout: 90_000 }) }
  const given = process.env.RBTNODE_TEST_PG_URL
  if (given !== undefined && given !== '') {
    const data = process.env.RBTNODE_TEST_PG_DATA ?? ''
    return { url: new URL(given), kill: async () => { await ctl('stop', data) }, revive: async () => { await ctl('up', data) }, dispose: async () => {} }
  }
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-pg-'))
  try {
    const { stdout } = await run('bash', [SCRIPT, 'start', dir, String(await freePort())], { timeout: 120_000 })
    const vars = Object.fromEntries(stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
    const data = vars.RBTNODE_TEST_PG_DATA!
    return {
      url: new URL(vars.RBTNODE_TEST_PG_URL!),
      kill: async () => { await ctl('stop', data) },
      revive: async () => { await ctl('up', data) },
      dispose: async () => { await ctl('stop', data).catch(() => {}); rmSync(dir, { recursive: true, force: true }) }
    }
  } catch (e) {
    rmSync(dir, { recursive: true, force: true })
    const why = `no PostgreSQL server could be started: ${((e as { stderr?: string }).stderr ?? (e as Error).message).trim()}`
    if (process.env.CI === 'true') throw new Error(why)
    return { skip: why }
  }
}
