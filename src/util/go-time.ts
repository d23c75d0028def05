/**
 * The reference's time text: Go's `time.Time.String()`, which the reference writes into DID
 * announcements, RAC TimeStamps and block comments. Layout `2006-01-02 15:04:05.999999999 -0700 MST`:
 * the fraction has its trailing zeros dropped (none for a whole second); the zone is an
 * abbreviation (`IST`, `EDT`, `UTC`), a numeric abbreviation (`+04`), or the offset again for an
 * unnamed fixed zone (`-0330`); `time.Now()` adds a monotonic reading ` m=±<seconds>.<9 digits>`,
 * which means nothing outside the process that wrote it and is skipped here.
 */

export interface GoTime {
  /** milliseconds since the Unix epoch (the nanoseconds below a millisecond dropped) */
  unixMs: number
  /** nanoseconds since the Unix epoch, exact */
  unixNano: bigint
  /** the zone's offset east of UTC, in seconds */
  offsetSeconds: number
  /** the zone as written (`IST`, `+04`, `-0330`) */
  zone: string
  /** the monotonic reading as written (`m=+0.0123…`), when there was one */
  monotonic?: string
}

/** Longest time text accepted: a full Go text with a monotonic reading is about 60 characters. */
export const MAX_TIME_TEXT_LENGTH = 80

const GO_TIME_RE = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))? ([+-])(\d{2})(\d{2}) ([A-Za-z]{1,6}|[+-]\d{2}(?:\d{2})?)(?: (m=[+-]\d+\.\d{9}))?$/

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** Parses Go's `time.Time.String()` text; undefined when `text` is not one. */
export function parseGoTime (text: string): GoTime | undefined {
  if (text.length > MAX_TIME_TEXT_LENGTH) return undefined
  const m = GO_TIME_RE.exec(text)
  if (m === null) return undefined
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]!) return undefined
  if (month === 2 && day === 29 && !(year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0))) return undefined
  if (hour > 23 || minute > 59 || second > 59) return undefined
  const offHours = Number(m[9])
  const offMinutes = Number(m[10])
  if (offHours > 23 || offMinutes > 59) return undefined
  const offsetSeconds = (m[8] === '-' ? -1 : 1) * (offHours * 3600 + offMinutes * 60)
  const zone = m[11]!
  // a numeric zone repeats the offset (in full, or its hours when the minutes are zero)
  if (/^[+-]/.test(zone)) {
    const written = zone.length === 3 ? `${zone}00` : zone
    if (written !== `${m[8]!}${m[9]!}${m[10]!}`) return undefined
  }
  const wallMs = Date.UTC(year, month - 1, day, hour, minute, second)
  if (Number.isNaN(wallMs)) return undefined
  const fraction = (m[7] ?? '').padEnd(9, '0')
  const nanos = BigInt(fraction)
  const unixSeconds = BigInt(wallMs / 1000 - offsetSeconds)
  const unixNano = unixSeconds * 1_000_000_000n + nanos
  const out: GoTime = { unixMs: Number(unixSeconds) * 1000 + Math.floor(Number(nanos) / 1_000_000), unixNano, offsetSeconds, zone }
  if (m[12] !== undefined) out.monotonic = m[12]
  return out
}

const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/

/**
 * A time text as nodes write it, in milliseconds since the epoch: the reference's Go text (any zone,
 * with or without the monotonic reading) or ISO-8601 with a zone (what this node writes).
 * Undefined when it is neither.
 */
export function parseTimeText (text: string): number | undefined {
  if (typeof text !== 'string' || text.length > MAX_TIME_TEXT_LENGTH) return undefined
  const go = parseGoTime(text)
  if (go !== undefined) return go.unixMs
  if (!ISO_RE.test(text)) return undefined
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? undefined : ms
}

/**
 * The time a block's comment names, as the reference writes it in the geneses and burns it makes
 * (`Test token generated at : <Go time>`, `FT generated at : <Go time> for FT Name : …`,
 * `Token burnt for parts at : <Go time>`); undefined when the comment names none.
 */
export function timeInComment (comment: string | undefined): number | undefined {
  if (comment === undefined || comment.length > 1024) return undefined
  const m = / at : (\d{4}-\d{2}-\d{2} [^ ]+ [+-]\d{4} [^ ]+(?: m=[+-]\d+\.\d{9})?)(?: for |$)/.exec(comment)
  return m === null ? undefined : parseGoTime(m[1]!)?.unixMs
}
