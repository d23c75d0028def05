/**
 * Line logger: `<ISO time> [LEVEL] <message>` on stderr, the shape operators' scripts parse.
 * One message is always one line: control characters are escaped (escapeControl).
 * Never pass secrets (passwords, private keys, mnemonics) to it.
 */
export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR'
const order: Record<LogLevel, number> = { DEBUG: 10, INFO: 20, WARN: 30, ERROR: 40 }

export interface Logger {
  debug: (msg: string) => void
  info: (msg: string) => void
  warn: (msg: string) => void
  error: (msg: string) => void
  child: (prefix: string) => Logger
}

export interface LoggerOptions { level?: LogLevel, write?: (line: string) => void, prefix?: string }

/**
 * Control characters (C0, DEL, C1) and the Unicode line and paragraph separators, which a message
 * may carry from a request (a DID, a path, a peer's error text).
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g
const HAS_CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/**
 * The message as one line: each control character becomes visible text (`\n`, `\r`, `\t`,
 * `\x1b`, `\u2028` …), so no message can end a log line early, forge the next one or send
 * terminal escape sequences. Messages without control characters are unchanged, byte for byte.
 */
export function escapeControl (msg: string): string {
  if (!HAS_CONTROL.test(msg)) return msg
  return msg.replace(CONTROL, (c) => {
    const named = NAMED[c]
    if (named !== undefined) return named
    const code = c.charCodeAt(0)
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
}

export function formatLine (level: LogLevel, msg: string, now: Date = new Date()): string {
  return `${now.toISOString()} [${level}] ${escapeControl(msg)}`
}

export function createLogger (opts: LoggerOptions = {}): Logger {
  const envLevel = (process.env.RBTNODE_LOG_LEVEL ?? '').toUpperCase() as LogLevel
  const min = order[opts.level ?? (envLevel in order ? envLevel : 'INFO')]
  const write = opts.write ?? ((line: string) => { process.stderr.write(line + '\n') })
  const prefix = opts.prefix !== undefined && opts.prefix !== '' ? `${opts.prefix}: ` : ''
  const log = (level: LogLevel) => (msg: string) => { if (order[level] >= min) write(formatLine(level, prefix + msg)) }
  return {
    debug: log('DEBUG'),
    info: log('INFO'),
    warn: log('WARN'),
    error: log('ERROR'),
    child: (p: string) => createLogger({ ...opts, prefix: prefix + p })
  }
}

export const silentLogger: Logger = {
  debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, child: () => silentLogger
}
