/**
 * Why a node's start failed, and whether starting it again can help: the exit code of `rbtnode run`
 * when the node cannot come up (docs/operations.md, "When a start fails"). A restart loop (systemd's
 * `RestartPreventExitStatus=78`, a supervisor script) retries on 75 and 70 and stops on 78.
 */
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'

/** A condition that may pass by itself: a port still held, a full disk, an I/O error, the store still held by a process on its way out. */
export const EXIT_START_RETRY = 75
/** The operator must act first: a damaged store, a bad or unreadable key or config file, a wrong password, a permission. */
export const EXIT_START_OPERATOR = 78
/** Not foreseen (a defect): the message and stack are logged; a retry may help. */
export const EXIT_START_INTERNAL = 70

export interface StartFailure {
  exitCode: typeof EXIT_START_RETRY | typeof EXIT_START_OPERATOR | typeof EXIT_START_INTERNAL
  /** a word for the kind of failure, first in the log line */
  kind: 'retry' | 'operator' | 'internal'
  /** what to tell the operator: the error's message, and what to do */
  message: string
}

/** System errors that pass by themselves (or once space is freed): starting again can help. */
const TRANSIENT = new Set(['EADDRINUSE', 'EADDRNOTAVAIL', 'ENOSPC', 'EDQUOT', 'EIO', 'EAGAIN', 'EBUSY', 'EMFILE', 'ENFILE', 'ENOMEM', 'ETIMEDOUT', 'EINTR', 'ECONNRESET'])
/** System errors that stay until someone changes the machine: permissions, a read-only or missing path. */
const PERSISTENT = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR', 'EISDIR', 'ELOOP', 'ENAMETOOLONG'])

/** The errno-style code of an error or of one of its causes, nearest first. */
export function systemCode (e: unknown): string | undefined {
  for (let cur: unknown = e, depth = 0; cur !== undefined && cur !== null && depth < 8; depth++) {
    const code = (cur as { code?: unknown }).code
    if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) return code
    // libp2p and LevelDB name the system error in their message only
    const m = /\b(EADDRINUSE|EADDRNOTAVAIL|ENOSPC|EACCES|EPERM|EROFS|EIO|EMFILE|ENFILE)\b/.exec(errorMessage(cur))
    if (m !== null) return m[1]
    cur = (cur as { cause?: unknown }).cause
  }
  return undefined
}

const HINTS: Record<string, string> = {
  EADDRINUSE: 'a port this node listens on is in use (another node on the same -n or -port/-swarmPort, or the last run\'s socket not released yet)',
  EADDRNOTAVAIL: 'the address to listen on is not on this machine (yet): check -host/-swarmHost',
  ENOSPC: 'the disk holding the node\'s data is full: free space',
  EDQUOT: 'the disk quota of the node\'s user is used up',
  EIO: 'an I/O error on the disk holding the node\'s data',
  EMFILE: 'too many open files: raise the limit (LimitNOFILE=)',
  ENFILE: 'too many open files on the machine',
  EACCES: 'permission denied: the node\'s user cannot read or write a file it needs',
  EPERM: 'operation not permitted on a file the node needs',
  EROFS: 'the node\'s data is on a read-only file system'
}

/** Classifies a failed start. */
export function classifyStartFailure (e: unknown): StartFailure {
  const message = errorMessage(e)
  const sys = systemCode(e)
  const hint = sys !== undefined && HINTS[sys] !== undefined && !message.includes(HINTS[sys]) ? ` (${sys}: ${HINTS[sys]})` : ''
  const storage = (e instanceof RbtError ? (e.details as { storage?: unknown } | undefined)?.storage : undefined)
  if (storage === 'damaged') return operator(message)
  if (storage === 'locked') return retry(message)
  if (sys !== undefined && TRANSIENT.has(sys)) return retry(message + hint)
  if (sys !== undefined && PERSISTENT.has(sys)) return operator(message + hint)
  if (e instanceof RbtError) {
    switch (e.code) {
      case ErrorCode.CONFIG:
      case ErrorCode.WRONG_PASSWORD:
      case ErrorCode.INVALID_INPUT:
        return operator(message)
      case ErrorCode.INSUFFICIENT_STORAGE:
      case ErrorCode.STORAGE_UNAVAILABLE:
      case ErrorCode.TIMEOUT:
        return retry(message)
      case ErrorCode.STORAGE:
        // a store that opens neither as damaged nor as locked: an I/O condition, most likely passing
        return retry(message)
      default:
        break
    }
  }
  return { exitCode: EXIT_START_INTERNAL, kind: 'internal', message: e instanceof Error && e.stack !== undefined ? e.stack : message }
}

const retry = (message: string): StartFailure => ({ exitCode: EXIT_START_RETRY, kind: 'retry', message })
const operator = (message: string): StartFailure => ({ exitCode: EXIT_START_OPERATOR, kind: 'operator', message })

/** The one log line of a failed start. */
export function startFailureLine (f: StartFailure): string {
  const what = f.kind === 'retry'
    ? `exit ${f.exitCode}: starting again may help`
    : f.kind === 'operator' ? `exit ${f.exitCode}: starting again will not help until this is fixed` : `exit ${f.exitCode}: an unforeseen error; starting again may help`
  return `start failed (${what}): ${f.message}`
}
