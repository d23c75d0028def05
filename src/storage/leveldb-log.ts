import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Lines of LevelDB's info log (`<db>/LOG`, rewritten at each open) that tell of data dropped or
 * ignored while the database was recovered or repaired, without their time and thread. LevelDB
 * drops a damaged stretch of its write-ahead log at open without failing the open.
 */
export function levelDbLossNotes (location: string): string[] {
  let text = ''
  try { text = readFileSync(join(location, 'LOG'), 'utf8') } catch { return [] }
  return text.split('\n')
    .filter((l) => /dropping|ignoring|corrupt|missing/i.test(l))
    .map((l) => l.replace(/^\S+ \S+ /, '').trim())
}
