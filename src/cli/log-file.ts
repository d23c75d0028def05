/**
 * `run -logFile <path>`: the node's log lines appended to a file as well as written to stderr. Lines
 * are written with a synchronous write each, so the last line before an exit (a failed start says
 * why) is in the file when the process ends. Colours are never written to the file.
 */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g

export interface LogFile {
  write: (line: string) => void
  close: () => void
}

export function openLogFile (path: string): LogFile {
  mkdirSync(dirname(path), { recursive: true })
  let fd: number | undefined = openSync(path, 'a', 0o600)
  return {
    write: (line) => {
      if (fd === undefined) return
      // a full disk must not stop the node from logging to stderr (nor from running)
      try { writeSync(fd, line.replace(ANSI, '') + '\n') } catch {}
    },
    close: () => {
      if (fd !== undefined) { try { closeSync(fd) } catch {} }
      fd = undefined
    }
  }
}
