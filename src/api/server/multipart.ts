/**
 * multipart/form-data uploads with hard limits: the body is read with a byte budget (never more
 * than `maxBytes` buffered), files are matched to the canonical names the route expects, and
 * uploaded file names are never used as paths.
 */
import type { Context } from 'hono'
import { ErrorCode, RbtError } from '../../util/errors.js'

export interface UploadLimits {
  /** Whole request body. */
  maxBytes: number
  /** Any one file. */
  maxFileBytes: number
}

export interface ParsedUpload {
  fields: Record<string, string>
  /** Files by canonical name. */
  files: Record<string, Uint8Array>
  /** the uploaded file name of each file, by canonical name */
  fileNames: Record<string, string>
}

export function isMultipart (c: Context): boolean {
  return /^multipart\/form-data/i.test(c.req.header('content-type') ?? '')
}

/**
 * Reads a request body, never holding more than `maxBytes`: a Content-Length above the limit is
 * refused before reading, and a body that grows past it while streaming is cut off.
 */
export async function readLimited (req: Request, maxBytes: number, what = 'Upload'): Promise<Uint8Array> {
  const tooLarge = (): RbtError => new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `${what} larger than ${maxBytes} bytes`)
  const declared = Number(req.headers.get('content-length') ?? NaN)
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge()
  if (req.body === null) return new Uint8Array(0)
  const reader = req.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => {})
      throw tooLarge()
    }
    chunks.push(value)
  }
  return new Uint8Array(Buffer.concat(chunks))
}

/** A file's canonical name: the field name if it is one, else a canonical name contained in the file name (as the reference matches). */
function canonicalName (field: string, filename: string, names: readonly string[]): string | undefined {
  if (names.includes(field)) return field
  const lower = filename.toLowerCase()
  // longest first: "quorumPubKey.pem" must not be taken for "pubKey.pem"
  return [...names].sort((a, b) => b.length - a.length).find((n) => lower.endsWith(n.toLowerCase()))
}

export async function parseUpload (c: Context, names: readonly string[], limits: UploadLimits): Promise<ParsedUpload> {
  if (!isMultipart(c)) throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid input: expected multipart/form-data')
  const bytes = await readLimited(c.req.raw, limits.maxBytes)
  let form: FormData
  try {
    form = await new Response(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) as unknown as ArrayBuffer, { headers: { 'content-type': c.req.header('content-type') ?? '' } }).formData()
  } catch {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid input: malformed multipart body')
  }
  const fields: Record<string, string> = {}
  const files: Record<string, Uint8Array> = {}
  const fileNames: Record<string, string> = {}
  for (const [field, value] of form as unknown as Iterable<[string, string | File]>) {
    if (typeof value === 'string') {
      if (Object.hasOwn(fields, field)) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: field ${field} given twice`)
      fields[field] = value
      continue
    }
    const filename = value.name ?? ''
    if (/[/\\\0]/.test(filename) || filename.includes('..') || /[/\\\0]/.test(field) || field.includes('..')) {
      throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: file name ${JSON.stringify(filename || field)} must be a plain name, not a path`)
    }
    const name = canonicalName(field, filename, names)
    if (name === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: unexpected file ${JSON.stringify(filename || field)} (expected one of ${names.join(', ')})`)
    if (Object.hasOwn(files, name)) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: ${name} given twice`)
    if (value.size > limits.maxFileBytes) throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `${name} is larger than ${limits.maxFileBytes} bytes`)
    files[name] = new Uint8Array(await value.arrayBuffer())
    fileNames[name] = filename
  }
  return { fields, files, fileNames }
}
