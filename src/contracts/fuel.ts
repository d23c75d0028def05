/**
 * Fuel metering by rewriting the binary: a mutable i64 global (exported as `__rbt_fuel`) starts at
 * the budget and is decremented on entry to every function and at the top of every loop iteration;
 * below zero the module traps. Straight-line code between those points is bounded by the module's
 * size, so the work of any call is bounded by the budget on every node alike: an endless loop ends
 * the same way everywhere. Instructions outside the supported set (MVP, sign extension, saturating
 * truncation, bulk memory, reference types) make the module refused, never run unmetered.
 */
import { ErrorCode, RbtError } from '../util/errors.js'

export const FUEL_EXPORT = '__rbt_fuel'

const bad = (why: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, `invalid contract: ${why}`)

class Reader {
  constructor (readonly b: Uint8Array, public at = 0) {}
  byte (): number {
    if (this.at >= this.b.length) throw bad('the module ends inside an instruction')
    return this.b[this.at++]
  }

  u32 (): number {
    let v = 0
    let shift = 0
    for (;;) {
      const x = this.byte()
      v += (x & 0x7f) * 2 ** shift
      if ((x & 0x80) === 0) return v
      shift += 7
      if (shift > 35) throw bad('bad LEB128 number')
    }
  }

  /** skips a signed LEB128 of up to `maxBytes` bytes */
  skipSigned (maxBytes: number): void {
    for (let i = 0; i < maxBytes; i++) if ((this.byte() & 0x80) === 0) return
    throw bad('bad LEB128 number')
  }

  skip (n: number): void {
    if (this.at + n > this.b.length) throw bad('the module ends inside an instruction')
    this.at += n
  }
}

const leb = (n: number): number[] => {
  const out: number[] = []
  do {
    let x = n & 0x7f
    n = Math.floor(n / 128)
    if (n !== 0) x |= 0x80
    out.push(x)
  } while (n !== 0)
  return out
}

const sleb64 = (n: bigint): number[] => {
  const out: number[] = []
  for (;;) {
    const x = Number(n & 0x7fn)
    n >>= 7n
    if ((n === 0n && (x & 0x40) === 0) || (n === -1n && (x & 0x40) !== 0)) { out.push(x); return out }
    out.push(x | 0x80)
  }
}

/** global.get f; i64.const 1; i64.sub; global.set f; global.get f; i64.const 0; i64.lt_s; if; unreachable; end */
const charge = (g: number): number[] => [0x23, ...leb(g), 0x42, 0x01, 0x7d, 0x24, ...leb(g), 0x23, ...leb(g), 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b]

function skipBlockType (r: Reader): void {
  const t = r.b[r.at]
  if (t === 0x40 || t === 0x7f || t === 0x7e || t === 0x7d || t === 0x7c || t === 0x7b || t === 0x70 || t === 0x6f) { r.at++; return }
  r.skipSigned(5)
}

/** Immediates of the 0xfc-prefixed instructions: saturating truncation (0-7), bulk memory and tables (8-17). */
function skipPrefixed (r: Reader): void {
  const sub = r.u32()
  if (sub <= 7) return
  switch (sub) {
    case 8: r.u32(); r.byte(); return
    case 9: case 13: case 15: case 16: case 17: r.u32(); return
    case 10: r.byte(); r.byte(); return
    case 11: r.byte(); return
    case 12: case 14: r.u32(); r.u32(); return
    default: throw bad(`instruction 0xfc ${sub} is not supported`)
  }
}

/** Copies one function body's instructions, inserting a charge after every `loop` header. */
function meterBody (body: Uint8Array, g: number): number[] {
  const r = new Reader(body)
  const groups = r.u32()
  for (let i = 0; i < groups; i++) { r.u32(); r.byte() }
  const out: number[] = [...body.subarray(0, r.at), ...charge(g)]
  let depth = 1
  while (depth > 0) {
    const start = r.at
    const op = r.byte()
    let loop = false
    switch (true) {
      case op === 0x02 || op === 0x04: skipBlockType(r); depth++; break
      case op === 0x03: skipBlockType(r); depth++; loop = true; break
      case op === 0x0b: depth--; break
      case op === 0x00 || op === 0x01 || op === 0x05 || op === 0x0f || op === 0x1a || op === 0x1b || op === 0xd1 || (op >= 0x45 && op <= 0xc4): break
      case op === 0x0c || op === 0x0d || op === 0x10 || (op >= 0x20 && op <= 0x26) || op === 0xd2: r.u32(); break
      case op === 0x0e: { const n = r.u32(); for (let i = 0; i <= n; i++) r.u32(); break }
      case op === 0x11 || (op >= 0x28 && op <= 0x3e): r.u32(); r.u32(); break
      case op === 0x1c: r.skip(r.u32()); break
      case op === 0x3f || op === 0x40 || op === 0xd0: r.byte(); break
      case op === 0x41: r.skipSigned(5); break
      case op === 0x42: r.skipSigned(10); break
      case op === 0x43: r.skip(4); break
      case op === 0x44: r.skip(8); break
      case op === 0xfc: skipPrefixed(r); break
      default: throw bad(`instruction 0x${op.toString(16)} is not supported (SIMD, threads and other proposals are not)`)
    }
    out.push(...body.subarray(start, r.at))
    if (loop) out.push(...charge(g))
  }
  if (r.at !== body.length) throw bad('a function body has bytes after its end')
  return out
}

/** The binary with fuel metering injected; the budget is the global's initial value. */
export function injectFuel (binary: Uint8Array, budget: bigint): Uint8Array<ArrayBuffer> {
  const sections: Array<{ id: number, body: Uint8Array }> = []
  const r = new Reader(binary, 8)
  while (r.at < binary.length) {
    const id = r.byte()
    const size = r.u32()
    const start = r.at
    r.skip(size)
    sections.push({ id, body: binary.subarray(start, start + size) })
  }
  const find = (id: number): { id: number, body: Uint8Array } | undefined => sections.find((s) => s.id === id)
  // no imports (checked before), so the new global's index is the number of defined globals
  const globals = find(6)
  const gr = new Reader(globals?.body ?? new Uint8Array([0]))
  const g = gr.u32()
  const newGlobal = [0x7e, 0x01, 0x42, ...sleb64(budget), 0x0b]
  const globalBody = [...leb(g + 1), ...(globals?.body.subarray(gr.at) ?? []), ...newGlobal]
  const exports = find(7)
  const er = new Reader(exports?.body ?? new Uint8Array([0]))
  const ne = er.u32()
  const name = [...new TextEncoder().encode(FUEL_EXPORT)]
  const exportBody = [...leb(ne + 1), ...(exports?.body.subarray(er.at) ?? []), ...leb(name.length), ...name, 0x03, ...leb(g)]
  const code = find(10)
  let codeBody: number[] | undefined
  if (code !== undefined) {
    const cr = new Reader(code.body)
    const n = cr.u32()
    codeBody = [...leb(n)]
    for (let i = 0; i < n; i++) {
      const size = cr.u32()
      const body = code.body.subarray(cr.at, cr.at + size)
      cr.skip(size)
      const metered = meterBody(body, g)
      codeBody.push(...leb(metered.length), ...metered)
    }
  }
  const out: number[] = [...binary.subarray(0, 8)]
  const emit = (id: number, body: ArrayLike<number>): void => { out.push(id, ...leb(body.length), ...Array.from(body)) }
  let globalsDone = false
  let exportsDone = false
  // section order: the data count section (12) sits between element (9) and code (10)
  const pos = (id: number): number => id === 12 ? 9.5 : id
  for (const s of sections) {
    // the global and export sections go where they belong
    if (!globalsDone && s.id !== 0 && pos(s.id) > 6) { emit(6, globalBody); globalsDone = true }
    if (!exportsDone && s.id !== 0 && pos(s.id) > 7) { emit(7, exportBody); exportsDone = true }
    if (s.id === 6) { if (!globalsDone) { emit(6, globalBody); globalsDone = true }; continue }
    if (s.id === 7) { if (!exportsDone) { emit(7, exportBody); exportsDone = true }; continue }
    if (s.id === 10 && codeBody !== undefined) { emit(10, codeBody); continue }
    emit(s.id, s.body)
  }
  if (!globalsDone) emit(6, globalBody)
  if (!exportsDone) emit(7, exportBody)
  return new Uint8Array(out)
}
