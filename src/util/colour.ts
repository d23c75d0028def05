/**
 * Colour at a terminal. Whether a stream gets colour is decided here without loading anything;
 * chalk is imported only when the answer is yes, so piped runs and client commands in scripts pay
 * nothing for it and write exactly the plain bytes.
 *
 * Rules, in order: FORCE_COLOR as chalk reads it (`0`/`false` off, empty/`true` basic, `1`-`3`
 * the level); NO_COLOR set to anything non-empty turns colour off; a stream that is not a TTY gets
 * none; TERM=dumb gets none.
 */
import type { LinePainter, LogLevel } from './logger.js'

export interface Painter extends LinePainter {
  did: (s: string) => string
  amount: (s: string) => string
  txid: (s: string) => string
  /** a heading or a label */
  label: (s: string) => string
  /** quieter text (hints, empty values) */
  dim: (s: string) => string
}

const same = (s: string): string => s
export const plainPainter: Painter = { level: (_l, t) => t, text: same, did: same, amount: same, txid: same, label: same, dim: same }

/** Colour level for a stream: 0 none, 1 basic, 2 256 colours, 3 truecolor. */
export function colourLevel (isTTY: boolean, env: NodeJS.ProcessEnv = process.env): number {
  const force = env.FORCE_COLOR
  if (force !== undefined) {
    if (force === 'false') return 0
    if (force === '' || force === 'true') return 1
    const n = Number.parseInt(force, 10)
    return Number.isNaN(n) ? 1 : Math.max(0, Math.min(n, 3))
  }
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return 0
  if (!isTTY) return 0
  if (env.TERM === 'dumb') return 0
  if (env.COLORTERM === 'truecolor' || env.COLORTERM === '24bit') return 3
  if (env.TERM !== undefined && /-256(color)?$/i.test(env.TERM)) return 2
  return 1
}

/** DIDs, transaction ids (64 hex characters) and RBT amounts inside free text. */
const HIGHLIGHT = /\b(bafybmi[a-z2-7]{52})\b|\b([0-9a-f]{64})\b|\b(\d+(?:\.\d+)? RBT)\b/g

/** The painter for a stream: plain unless colourLevel says otherwise (then chalk is loaded). */
export async function painterFor (isTTY: boolean, env: NodeJS.ProcessEnv = process.env): Promise<Painter> {
  const level = colourLevel(isTTY, env)
  if (level === 0) return plainPainter
  const { Chalk } = await import('chalk')
  const c = new Chalk({ level: level as 1 | 2 | 3 })
  const levels: Record<LogLevel, (s: string) => string> = { DEBUG: c.gray, INFO: c.green, WARN: c.yellow, ERROR: c.red.bold }
  const did = (s: string): string => c.cyan(s)
  const txid = (s: string): string => c.magenta(s)
  const amount = (s: string): string => c.yellow(s)
  return {
    level: (l, t) => levels[l](t),
    text: (msg) => msg.replace(HIGHLIGHT, (m, d?: string, t?: string) => d !== undefined ? did(m) : t !== undefined ? txid(m) : amount(m)),
    did,
    txid,
    amount,
    label: (s) => c.bold(s),
    dim: (s) => c.dim(s)
  }
}
