/**
 * Line logger: `<ISO time> [LEVEL] <message>` on stderr, the shape operators' scripts parse.
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

export function formatLine (level: LogLevel, msg: string, now: Date = new Date()): string {
  return `${now.toISOString()} [${level}] ${msg}`
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
