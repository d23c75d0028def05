/**
 * libp2p private-network key files (PSK v1, the format Kubo and the reference network use):
 *
 *   /key/swarm/psk/1.0.0/
 *   /base16/
 *   <64 hex characters = 32 key bytes>
 *
 * go-libp2p (and so Kubo) reads two other encodings on the second line, `/base64/` (standard
 * base64 of the 32 bytes) and `/bin/` (the 32 bytes themselves); both are read here too.
 *
 * Only parsing lives here; reading files is kept separate so the parser is trivially testable.
 */
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { findPackageRoot } from '../util/package-root.js'

export { findPackageRoot }

const HEADER = '/key/swarm/psk/1.0.0/'
const ENCODING = '/base16/'
const ENCODING_BASE64 = '/base64/'
const ENCODING_BIN = '/bin/'
const KEY_BYTES = 32

export interface SwarmKey {
  /** The 32 raw key bytes. */
  readonly key: Uint8Array
  /** Lower-case hex of `key`. */
  readonly hex: string
  /** The canonical PSK v1 file bytes, which is what @libp2p/pnet's `preSharedKey({ psk })` expects. */
  readonly psk: Uint8Array
}

function configError (message: string, source?: string, cause?: unknown): RbtError {
  const where = source !== undefined ? ` (${source})` : ''
  return new RbtError(ErrorCode.CONFIG, `invalid swarm key${where}: ${message}`, cause !== undefined ? { cause } : undefined)
}

/** Build a SwarmKey from 32 raw bytes. */
export function swarmKeyFromBytes (key: Uint8Array): SwarmKey {
  if (key.length !== KEY_BYTES) throw configError(`expected ${KEY_BYTES} key bytes, got ${key.length}`)
  const hex = Buffer.from(key).toString('hex')
  const psk = new TextEncoder().encode(`${HEADER}\n${ENCODING}\n${hex}\n`)
  return { key: Uint8Array.from(key), hex, psk }
}

/**
 * Parse the text (or bytes) of a PSK v1 file. Accepts LF or CRLF line ends, a missing final newline,
 * surrounding blank space and upper- or lower-case hex. Anything else is a CONFIG error that says
 * what was wrong; `source` (e.g. the file path) is named in the message.
 */
export function parseSwarmKey (input: string | Uint8Array, source?: string): SwarmKey {
  if (typeof input !== 'string') {
    const raw = binaryKey(input)
    if (raw !== undefined) return swarmKeyFromBytes(raw)
  }
  let text: string
  if (typeof input === 'string') {
    text = input
  } else {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(input)
    } catch (e) {
      throw configError('file is not UTF-8 text', source, e)
    }
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1) // tolerate a byte-order mark
  const lines = text.trim().split(/\r\n|\n|\r/).map(l => l.trim()).filter(l => l !== '')
  if (lines.length === 0) throw configError('file is empty', source)
  if (lines[0] !== HEADER) throw configError(`first line must be "${HEADER}", got "${truncate(lines[0])}"`, source)
  if (lines.length < 2 || (lines[1] !== ENCODING && lines[1] !== ENCODING_BASE64)) {
    throw configError(`second line must be "${ENCODING}" or "${ENCODING_BASE64}", got "${truncate(lines[1] ?? '')}"`, source)
  }
  if (lines.length < 3) throw configError('key line is missing', source)
  if (lines.length > 3) throw configError(`unexpected content after the key line: "${truncate(lines[3])}"`, source)
  if (lines[1] === ENCODING_BASE64) {
    const b64 = lines[2]
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) throw configError('key line is not standard base64', source)
    const key = Buffer.from(b64, 'base64')
    if (key.length !== KEY_BYTES) throw configError(`key must be ${KEY_BYTES} bytes, got ${key.length}`, source)
    return swarmKeyFromBytes(Uint8Array.from(key))
  }
  const hex = lines[2]
  if (!/^[0-9a-fA-F]*$/.test(hex)) throw configError('key line contains non-hex characters', source)
  if (hex.length !== KEY_BYTES * 2) throw configError(`key must be ${KEY_BYTES * 2} hex characters, got ${hex.length}`, source)
  return swarmKeyFromBytes(Uint8Array.from(Buffer.from(hex, 'hex')))
}

/** Read and parse a swarm key file. Missing or unreadable files are CONFIG errors naming the path. */
export async function loadSwarmKey (path: string): Promise<SwarmKey> {
  let raw: Uint8Array
  try {
    raw = await readFile(path)
  } catch (e) {
    throw new RbtError(ErrorCode.CONFIG, `cannot read swarm key file ${path}: ${errorMessage(e)}`, { cause: e })
  }
  return parseSwarmKey(raw, path)
}

/** Render a swarm key in the PSK v1 file format (with a final newline). */
export function formatSwarmKey (key: SwarmKey): string {
  return new TextDecoder().decode(key.psk)
}

/**
 * The key of a `/bin/` file: the 32 bytes after the second line, as go-libp2p reads them (what
 * follows them is ignored there too). Undefined for any other file.
 */
function binaryKey (bytes: Uint8Array): Uint8Array | undefined {
  const line = (from: number): { text: string, next: number } | undefined => {
    const end = bytes.indexOf(0x0a, from)
    if (end < 0) return undefined
    return { text: Buffer.from(bytes.subarray(from, end)).toString('latin1').replace(/\r$/, ''), next: end + 1 }
  }
  const first = line(0)
  if (first?.text !== HEADER) return undefined
  const second = line(first.next)
  if (second?.text !== ENCODING_BIN) return undefined
  if (bytes.length - second.next < KEY_BYTES) throw configError(`a ${ENCODING_BIN} key needs ${KEY_BYTES} bytes after its second line, got ${bytes.length - second.next}`)
  return bytes.slice(second.next, second.next + KEY_BYTES)
}

function truncate (s: string): string {
  return s.length > 40 ? `${s.slice(0, 40)}...` : s
}

/** Path of the swarm key shipped with the package: `swarm-keys/swarm.key` (main net) or `swarm-keys/testswarm.key`. */
export function defaultSwarmKeyPath (testNet: boolean): string {
  return resolve(findPackageRoot(), 'swarm-keys', testNet ? 'testswarm.key' : 'swarm.key')
}

/** Synchronous variant for start-up code paths that cannot await. */
export function loadSwarmKeySync (path: string): SwarmKey {
  let raw: Uint8Array
  try {
    raw = readFileSync(path)
  } catch (e) {
    throw new RbtError(ErrorCode.CONFIG, `cannot read swarm key file ${path}: ${errorMessage(e)}`, { cause: e })
  }
  return parseSwarmKey(raw, path)
}
