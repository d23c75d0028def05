/**
 * The bitswap message as Kubo's bitswap (boxo) writes it: one protobuf message per uvarint-length
 * frame. Fields (bitswap 1.2.0; 1.0.0 sends blocks whole in field 2, later versions as payloads):
 *
 *   Message { 1 wantlist: Wantlist, 2 blocks: repeated bytes, 3 payload: repeated Block,
 *             4 blockPresences: repeated BlockPresence, 5 pendingBytes: int32 }
 *   Wantlist { 1 entries: repeated Entry, 2 full: bool }
 *   Entry { 1 block: CID bytes, 2 priority: int32, 3 cancel: bool, 4 wantType: 0 block | 1 have,
 *           5 sendDontHave: bool }
 *   Block { 1 prefix: CID prefix (version, codec, hash code, digest length as varints), 2 data }
 *   BlockPresence { 1 cid: CID bytes, 2 type: 0 have | 1 dont-have }
 *
 * Encoding and decoding are written out here (a few dozen lines) rather than generated.
 */
import { CID } from 'multiformats/cid'
import { ErrorCode, RbtError } from '../../util/errors.js'

export const WANT_BLOCK = 0
export const WANT_HAVE = 1
export const PRESENCE_HAVE = 0
export const PRESENCE_DONT_HAVE = 1

export interface WantEntry {
  cid: CID
  priority: number
  cancel: boolean
  wantType: typeof WANT_BLOCK | typeof WANT_HAVE
  sendDontHave: boolean
}

export interface BlockPayload {
  /** the CID prefix: the block's CID is this prefix applied to the data's digest */
  prefix: Uint8Array
  data: Uint8Array
}

export interface BlockPresence {
  cid: CID
  type: typeof PRESENCE_HAVE | typeof PRESENCE_DONT_HAVE
}

export interface BitswapMessage {
  wantlist: { entries: WantEntry[], full: boolean }
  /** bitswap 1.0.0 blocks (CIDv0, dag-pb, sha2-256 implied) */
  blocks: Uint8Array[]
  payload: BlockPayload[]
  blockPresences: BlockPresence[]
  pendingBytes: number
}

export function emptyMessage (): BitswapMessage {
  return { wantlist: { entries: [], full: false }, blocks: [], payload: [], blockPresences: [], pendingBytes: 0 }
}

/** The prefix of a CID as bitswap sends it: version, codec, hash code and digest length. */
export function cidPrefix (cid: CID): Uint8Array {
  const out: number[] = []
  pushVarint(out, cid.version)
  pushVarint(out, cid.version === 0 ? 0x70 : cid.code)
  pushVarint(out, cid.multihash.code)
  pushVarint(out, cid.multihash.size)
  return Uint8Array.from(out)
}

export interface ParsedPrefix { version: number, codec: number, hashCode: number, digestLength: number }

export function parseCidPrefix (prefix: Uint8Array): ParsedPrefix {
  const r = new Reader(prefix)
  const p = { version: r.varint(), codec: r.varint(), hashCode: r.varint(), digestLength: r.varint() }
  if (p.version > 1) throw bad(`CID version ${p.version}`)
  return p
}

// ---------------------------------------------------------------------------------------------
// encoding

function pushVarint (out: number[], n: number): void {
  if (n < 0) {
    // int32 negatives: ten bytes, as protobuf sign-extends them
    let v = BigInt.asUintN(64, BigInt(n))
    for (let i = 0; i < 9; i++) { out.push(Number(v & 0x7fn) | 0x80); v >>= 7n }
    out.push(Number(v))
    return
  }
  while (n >= 0x80) { out.push((n % 0x80) | 0x80); n = Math.floor(n / 0x80) }
  out.push(n)
}

/** Builds a protobuf message from fields; byte fields are kept by reference until `finish`. */
class Writer {
  private readonly parts: Uint8Array[] = []
  private head: number[] = []
  length = 0

  private flushHead (): void {
    if (this.head.length === 0) return
    const b = Uint8Array.from(this.head)
    this.parts.push(b)
    this.length += b.length
    this.head = []
  }

  varintField (field: number, n: number): void {
    if (n === 0) return
    pushVarint(this.head, field << 3)
    pushVarint(this.head, n)
  }

  bytesField (field: number, bytes: Uint8Array, always = false): void {
    if (bytes.length === 0 && !always) return
    pushVarint(this.head, (field << 3) | 2)
    pushVarint(this.head, bytes.length)
    this.flushHead()
    if (bytes.length > 0) { this.parts.push(bytes); this.length += bytes.length }
  }

  finish (): Uint8Array {
    this.flushHead()
    if (this.parts.length === 1) return this.parts[0]
    const out = new Uint8Array(this.length)
    let at = 0
    for (const p of this.parts) { out.set(p, at); at += p.length }
    return out
  }
}

function encodeEntry (e: WantEntry): Uint8Array {
  const w = new Writer()
  w.bytesField(1, e.cid.bytes, true)
  w.varintField(2, e.priority)
  w.varintField(3, e.cancel ? 1 : 0)
  w.varintField(4, e.wantType)
  w.varintField(5, e.sendDontHave ? 1 : 0)
  return w.finish()
}

export function encodeMessage (m: BitswapMessage): Uint8Array {
  const w = new Writer()
  if (m.wantlist.entries.length > 0 || m.wantlist.full) {
    const wl = new Writer()
    for (const e of m.wantlist.entries) wl.bytesField(1, encodeEntry(e), true)
    wl.varintField(2, m.wantlist.full ? 1 : 0)
    w.bytesField(1, wl.finish(), true)
  }
  for (const b of m.blocks) w.bytesField(2, b, true)
  for (const p of m.payload) {
    const pw = new Writer()
    pw.bytesField(1, p.prefix)
    pw.bytesField(2, p.data, true)
    w.bytesField(3, pw.finish(), true)
  }
  for (const p of m.blockPresences) {
    const pw = new Writer()
    pw.bytesField(1, p.cid.bytes, true)
    pw.varintField(2, p.type)
    w.bytesField(4, pw.finish(), true)
  }
  w.varintField(5, m.pendingBytes)
  return w.finish()
}

// ---------------------------------------------------------------------------------------------
// decoding

const bad = (what: string): RbtError => new RbtError(ErrorCode.PROTOCOL, `malformed bitswap message: ${what}`)

class Reader {
  at = 0
  constructor (readonly buf: Uint8Array) {}
  get done (): boolean { return this.at >= this.buf.length }

  varint (): number {
    let n = 0
    let mul = 1
    for (let i = 0; i < 10; i++) {
      if (this.at >= this.buf.length) throw bad('truncated varint')
      const b = this.buf[this.at++]
      if (i < 8) n += (b & 0x7f) * mul
      mul *= 128
      if (b < 0x80) return n
    }
    throw bad('varint too long')
  }

  /** An int32 field: ten-byte negatives come back negative. */
  int32 (): number {
    let v = 0n
    for (let i = 0; i < 10; i++) {
      if (this.at >= this.buf.length) throw bad('truncated varint')
      const b = this.buf[this.at++]
      v |= BigInt(b & 0x7f) << BigInt(7 * i)
      if (b < 0x80) return Number(BigInt.asIntN(32, v))
    }
    throw bad('varint too long')
  }

  bytes (): Uint8Array {
    const len = this.varint()
    if (this.at + len > this.buf.length) throw bad('truncated field')
    const b = this.buf.subarray(this.at, this.at + len)
    this.at += len
    return b
  }

  skip (wire: number): void {
    if (wire === 0) this.varint()
    else if (wire === 2) this.bytes()
    else if (wire === 1) this.at += 8
    else if (wire === 5) this.at += 4
    else throw bad(`wire type ${wire}`)
    if (this.at > this.buf.length) throw bad('truncated field')
  }

  /** Calls `fn(field, wireType)` for every field; `fn` reads the value or returns false to skip it. */
  fields (fn: (field: number, wire: number) => boolean): void {
    while (!this.done) {
      const key = this.varint()
      const field = Math.floor(key / 8)
      const wire = key & 7
      if (!fn(field, wire)) this.skip(wire)
    }
  }
}

function decodeCid (bytes: Uint8Array): CID {
  try {
    return CID.decode(bytes)
  } catch {
    throw bad('invalid CID')
  }
}

function decodeEntry (buf: Uint8Array): WantEntry {
  const r = new Reader(buf)
  let cid: CID | undefined
  const e = { priority: 0, cancel: false, wantType: WANT_BLOCK as WantEntry['wantType'], sendDontHave: false }
  r.fields((f, w) => {
    if (f === 1 && w === 2) cid = decodeCid(r.bytes())
    else if (f === 2 && w === 0) e.priority = r.int32()
    else if (f === 3 && w === 0) e.cancel = r.varint() !== 0
    else if (f === 4 && w === 0) e.wantType = r.varint() === WANT_HAVE ? WANT_HAVE : WANT_BLOCK
    else if (f === 5 && w === 0) e.sendDontHave = r.varint() !== 0
    else return false
    return true
  })
  if (cid === undefined) throw bad('a want entry without a CID')
  return { cid, ...e }
}

export function decodeMessage (buf: Uint8Array): BitswapMessage {
  const m = emptyMessage()
  const r = new Reader(buf)
  r.fields((f, w) => {
    if (f === 1 && w === 2) {
      const wr = new Reader(r.bytes())
      wr.fields((wf, ww) => {
        if (wf === 1 && ww === 2) m.wantlist.entries.push(decodeEntry(wr.bytes()))
        else if (wf === 2 && ww === 0) m.wantlist.full = wr.varint() !== 0
        else return false
        return true
      })
    } else if (f === 2 && w === 2) {
      m.blocks.push(r.bytes())
    } else if (f === 3 && w === 2) {
      const pr = new Reader(r.bytes())
      const p: BlockPayload = { prefix: new Uint8Array(0), data: new Uint8Array(0) }
      pr.fields((pf, pw) => {
        if (pf === 1 && pw === 2) p.prefix = pr.bytes()
        else if (pf === 2 && pw === 2) p.data = pr.bytes()
        else return false
        return true
      })
      m.payload.push(p)
    } else if (f === 4 && w === 2) {
      const pr = new Reader(r.bytes())
      let cid: CID | undefined
      let type: BlockPresence['type'] = PRESENCE_HAVE
      pr.fields((pf, pw) => {
        if (pf === 1 && pw === 2) cid = decodeCid(pr.bytes())
        else if (pf === 2 && pw === 0) type = pr.varint() === PRESENCE_DONT_HAVE ? PRESENCE_DONT_HAVE : PRESENCE_HAVE
        else return false
        return true
      })
      if (cid === undefined) throw bad('a block presence without a CID')
      m.blockPresences.push({ cid, type })
    } else if (f === 5 && w === 0) {
      m.pendingBytes = r.int32()
    } else {
      return false
    }
    return true
  })
  return m
}
