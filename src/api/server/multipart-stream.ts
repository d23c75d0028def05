/**
 * multipart/form-data read as it arrives: each part's bytes are handed to a sink as they come, so
 * an upload of any size passes through a bounded amount of memory (the read chunk plus a
 * boundary's length). Part headers are bounded; file names are never used as paths (the sinks
 * decide where bytes go).
 */
import { ErrorCode, RbtError } from '../../util/errors.js'

export interface PartInfo {
  /** the form field name */
  field: string
  /** the uploaded file name (file parts only) */
  filename?: string
}

export interface PartSink {
  write: (bytes: Uint8Array) => Promise<void>
  end: () => Promise<void>
}

const MAX_HEADER_BYTES = 16 * 1024
const CRLF = Buffer.from('\r\n')
const HEADER_END = Buffer.from('\r\n\r\n')

const malformed = (why: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: malformed multipart body (${why})`)

/** The boundary of a multipart/form-data content type. */
export function multipartBoundary (contentType: string | undefined): string {
  const m = /^multipart\/form-data\s*;.*?boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType ?? '')
  if (m === null) throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid input: expected multipart/form-data with a boundary')
  return m[1] ?? m[2]
}

function parseHeaders (text: string): PartInfo {
  let field: string | undefined
  let filename: string | undefined
  for (const line of text.split('\r\n')) {
    const idx = line.indexOf(':')
    if (idx < 0) continue
    if (line.slice(0, idx).trim().toLowerCase() !== 'content-disposition') continue
    const v = line.slice(idx + 1)
    const name = /(?:^|;)\s*name="([^"]*)"/i.exec(v) ?? /(?:^|;)\s*name=([^;\s]+)/i.exec(v)
    const file = /(?:^|;)\s*filename="([^"]*)"/i.exec(v) ?? /(?:^|;)\s*filename=([^;\s]+)/i.exec(v)
    field = name?.[1]
    filename = file?.[1]
  }
  if (field === undefined) throw malformed('a part without a field name')
  return { field, ...(filename !== undefined ? { filename } : {}) }
}

/**
 * Reads `body` (the request's bytes) part by part: `onPart` gives the sink of each part's bytes;
 * the next bytes are read only once the sink took the previous ones, so a slow disk slows the
 * sender down instead of filling memory. A sink that throws ends the read (the rest of the body is
 * not read); the error is rethrown. A part's bytes are handed over as views of the body's reads,
 * not copies, and never changed afterwards: a sink may keep them (provided the body's reader
 * does not reuse its buffers, as Node's streams do not).
 */
export async function streamMultipart (body: AsyncIterable<Uint8Array> | null, contentType: string | undefined, onPart: (p: PartInfo) => Promise<PartSink>): Promise<void> {
  const boundary = multipartBoundary(contentType)
  if (body === null) throw malformed('empty body')
  const delimiter = Buffer.from(`\r\n--${boundary}`)
  const reader = body[Symbol.asyncIterator]()
  // the body starts with the first delimiter without its CRLF: pretend one came before it
  let buf: Buffer = Buffer.from(CRLF)
  let eof = false
  /** The next read as a Buffer (a view, not a copy), or undefined at the end. */
  const read = async (): Promise<Buffer | undefined> => {
    if (eof) return undefined
    const { done, value } = await reader.next()
    if (done === true) { eof = true; return undefined }
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  }
  const more = async (): Promise<boolean> => {
    const next = await read()
    if (next === undefined) return false
    buf = buf.length === 0 ? next : Buffer.concat([buf, next])
    return true
  }
  try {
    // preamble: up to the first delimiter
    for (;;) {
      const at = buf.indexOf(delimiter)
      if (at >= 0) { buf = buf.subarray(at + delimiter.length); break }
      if (buf.length > delimiter.length) buf = buf.subarray(buf.length - delimiter.length)
      if (!await more()) throw malformed('no boundary')
    }
    for (;;) {
      // after a delimiter: "--" ends the body, CRLF starts a part
      while (buf.length < 2) if (!await more()) throw malformed('cut short')
      if (buf[0] === 0x2d && buf[1] === 0x2d) return
      if (buf[0] !== 0x0d || buf[1] !== 0x0a) throw malformed('bad delimiter')
      buf = buf.subarray(2)
      let end = buf.indexOf(HEADER_END)
      while (end < 0) {
        if (buf.length > MAX_HEADER_BYTES) throw malformed('part headers too large')
        if (!await more()) throw malformed('cut short in part headers')
        end = buf.indexOf(HEADER_END)
      }
      const info = parseHeaders(buf.subarray(0, end).toString('utf8'))
      buf = buf.subarray(end + HEADER_END.length)
      const sink = await onPart(info)
      for (;;) {
        const at = buf.indexOf(delimiter)
        if (at >= 0) {
          if (at > 0) await sink.write(buf.subarray(0, at))
          buf = buf.subarray(at + delimiter.length)
          break
        }
        // keep what could be the start of a delimiter; the rest is the part's
        const safe = buf.length - (delimiter.length - 1)
        if (safe > 0) {
          await sink.write(buf.subarray(0, safe))
          buf = buf.subarray(safe)
        }
        const next = await read()
        if (next === undefined) throw malformed('cut short in a part')
        // the kept tail starts no delimiter when none is found across it and the next read's
        // first bytes: the tail is the part's, and the read is scanned where it lies (no join)
        if (buf.length > 0 && next.length >= delimiter.length && Buffer.concat([buf, next.subarray(0, delimiter.length - 1)]).indexOf(delimiter) < 0) {
          await sink.write(buf)
          buf = next
        } else {
          buf = buf.length === 0 ? next : Buffer.concat([buf, next])
        }
      }
      await sink.end()
    }
  } finally {
    if (!eof) await reader.return?.().catch(() => {})
  }
}
