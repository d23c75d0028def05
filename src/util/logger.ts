/**
 * Line logger on stderr. The default format is `<ISO time> [LEVEL] <message>`, the shape operators'
 * scripts parse; `json` writes one object per line (`time`, `level`, `msg`, `component`).
 * One message is always one line: control characters are escaped (escapeControl, or JSON escaping).
 * Never pass secrets (passwords, private keys, mnemonics) to it.
 */
export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR'
const order: Record<LogLevel, number> = { DEBUG: 10, INFO: 20, WARN: 30, ERROR: 40 }

export type LogFormat = 'text' | 'json'
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json']

/** One log entry before it is formatted. `component` names the child loggers, outermost first, joined by dots. */
export interface LogRecord {
  time: string
  level: LogLevel
  msg: string
  component?: string
}

export interface Logger {
  debug: (msg: string) => void
  info: (msg: string) => void
  warn: (msg: string) => void
  error: (msg: string) => void
  child: (prefix: string) => Logger
  /** The last WARN and ERROR entries, oldest first (loggers made by createLogger keep them). */
  recent?: () => LogRecord[]
}

/** Colours of a line at a terminal; without one, lines are plain (see src/util/colour.ts). */
export interface LinePainter {
  /** the `[LEVEL]` token */
  level: (level: LogLevel, token: string) => string
  /** the message, already escaped */
  text: (msg: string) => string
}

export interface LoggerOptions {
  level?: LogLevel
  write?: (line: string) => void
  prefix?: string
  /** text (default) or json */
  format?: LogFormat
  /** colours for the text format; ignored for json */
  painter?: LinePainter
  /** where WARN and ERROR entries are kept (shared by a logger and its children) */
  recent?: RecentLog
}

/** A ring buffer of the last WARN and ERROR entries, for the node's status. */
export class RecentLog {
  private readonly items: LogRecord[] = []
  constructor (readonly size = 10) {}
  push (r: LogRecord): void {
    this.items.push(r)
    if (this.items.length > this.size) this.items.splice(0, this.items.length - this.size)
  }

  list (): LogRecord[] { return this.items.map((r) => ({ ...r })) }
}

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

export function formatLine (level: LogLevel, msg: string, now: Date = new Date(), painter?: LinePainter): string {
  if (painter === undefined) return `${now.toISOString()} [${level}] ${escapeControl(msg)}`
  return `${now.toISOString()} ${painter.level(level, `[${level}]`)} ${painter.text(escapeControl(msg))}`
}

/** Characters JSON.stringify leaves as they are but a terminal or a line reader may act on. */
const JSON_UNSAFE = /[\u007f-\u009f\u2028\u2029]/g

/**
 * One JSON object on one line: `time`, `level`, `msg` and, for a child logger, `component`. JSON
 * escaping covers C0 controls; DEL, C1 and the line separators are escaped as \uXXXX as well.
 */
export function formatJson (r: LogRecord): string {
  const o: Record<string, string> = { time: r.time, level: r.level, msg: r.msg }
  if (r.component !== undefined && r.component !== '') o.component = r.component
  return JSON.stringify(o).replace(JSON_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

export function parseLogFormat (v: string | undefined, source = '-logFormat'): LogFormat | undefined {
  if (v === undefined || v === '') return undefined
  const f = v.toLowerCase()
  if (f === 'text' || f === 'json') return f
  throw new Error(`${source} must be text or json, got "${v}"`)
}

export function createLogger (opts: LoggerOptions = {}): Logger {
  const envLevel = (process.env.RBTNODE_LOG_LEVEL ?? '').toUpperCase() as LogLevel
  const min = order[opts.level ?? (envLevel in order ? envLevel : 'INFO')]
  const write = opts.write ?? ((line: string) => { process.stderr.write(line + '\n') })
  const names = opts.prefix !== undefined && opts.prefix !== '' ? [opts.prefix] : []
  const recent = opts.recent ?? new RecentLog()
  return make(names)

  function make (components: string[]): Logger {
    const prefix = components.map((c) => `${c}: `).join('')
    const component = components.length > 0 ? escapeControl(components.join('.')) : undefined
    const log = (level: LogLevel) => (msg: string) => {
      const keep = order[level] >= order.WARN
      if (order[level] < min && !keep) return
      const now = new Date()
      if (keep) recent.push({ time: now.toISOString(), level, msg: escapeControl(prefix + msg), ...(component !== undefined ? { component } : {}) })
      if (order[level] < min) return
      write(opts.format === 'json'
        ? formatJson({ time: now.toISOString(), level, msg, component: components.length > 0 ? components.join('.') : undefined })
        : formatLine(level, prefix + msg, now, opts.painter))
    }
    return {
      debug: log('DEBUG'),
      info: log('INFO'),
      warn: log('WARN'),
      error: log('ERROR'),
      child: (p: string) => make(p === '' ? components : [...components, p]),
      recent: () => recent.list()
    }
  }
}

export const silentLogger: Logger = {
  debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, child: () => silentLogger
}
