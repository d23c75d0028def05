/**
 * Checks a contract binary against ABI v1 and caps its memory: the module must validate, import
 * nothing, export `memory`, `alloc` and `execute`, and have exactly one 32-bit unshared memory. The
 * memory section is rewritten so the declared maximum is at most the cap; `memory.grow` past it then
 * fails inside the module (returns -1) the same way on every node. With a fuel budget the module is
 * also metered (fuel.ts).
 */
import { ErrorCode, RbtError } from '../util/errors.js'
import { FUEL_EXPORT, injectFuel } from './fuel.js'

const MAGIC = [0x00, 0x61, 0x73, 0x6d]
const MEMORY_SECTION = 5

function readU32 (b: Uint8Array, at: number): { value: number, next: number } {
  let value = 0
  let shift = 0
  let i = at
  for (;;) {
    if (i >= b.length || shift > 28) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid WASM: bad LEB128 number')
    const byte = b[i++]
    value += (byte & 0x7f) * 2 ** shift
    if ((byte & 0x80) === 0) break
    shift += 7
  }
  if (value > 0xffffffff) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid WASM: number out of range')
  return { value, next: i }
}

function writeU32 (n: number): number[] {
  const out: number[] = []
  do {
    let byte = n & 0x7f
    n = Math.floor(n / 128)
    if (n !== 0) byte |= 0x80
    out.push(byte)
  } while (n !== 0)
  return out
}

export interface PreparedModule {
  /** the binary with its memory maximum capped and, with a budget, metered (what is actually run) */
  binary: Uint8Array<ArrayBuffer>
  memory: { min: number, max: number }
}

/** Validates `binary` against ABI v1 and returns it with the memory cap applied; throws INVALID_INPUT with the reason. */
export function prepareModule (input: Uint8Array, maxPages: number, fuel?: number): PreparedModule {
  const binary = new Uint8Array(input)
  if (binary.length < 8 || MAGIC.some((m, i) => binary[i] !== m)) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid WASM: not a WebAssembly binary (bad magic number)')
  if (!WebAssembly.validate(binary)) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid WASM: the module does not validate')
  const mod = new WebAssembly.Module(binary)
  const imports = WebAssembly.Module.imports(mod)
  if (imports.length > 0) throw new RbtError(ErrorCode.INVALID_INPUT, `invalid contract: ABI v1 allows no imports, the module imports ${imports.map((i) => `${i.module}.${i.name}`).join(', ')}`)
  const exports = new Map(WebAssembly.Module.exports(mod).map((e) => [e.name, e.kind]))
  for (const [name, kind] of [['memory', 'memory'], ['alloc', 'function'], ['execute', 'function']] as const) {
    if (exports.get(name) !== kind) throw new RbtError(ErrorCode.INVALID_INPUT, `invalid contract: ABI v1 needs an exported ${kind} "${name}"`)
  }
  // rewrite the memory section
  const out: number[] = [...binary.subarray(0, 8)]
  let at = 8
  let memory: PreparedModule['memory'] | undefined
  while (at < binary.length) {
    const id = binary[at]
    const size = readU32(binary, at + 1)
    const start = size.next
    const end = start + size.value
    if (end > binary.length) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid WASM: section runs past the end')
    if (id !== MEMORY_SECTION) {
      out.push(...binary.subarray(at, end))
      at = end
      continue
    }
    const count = readU32(binary, start)
    if (count.value !== 1) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid contract: exactly one memory is allowed')
    const flags = binary[count.next]
    if (flags !== 0 && flags !== 1) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid contract: shared or 64-bit memories are not allowed')
    const min = readU32(binary, count.next + 1)
    let max = maxPages
    let after = min.next
    if (flags === 1) {
      const m = readU32(binary, min.next)
      max = Math.min(m.value, maxPages)
      after = m.next
    }
    if (after !== end) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid WASM: malformed memory section')
    if (min.value > maxPages) throw new RbtError(ErrorCode.INVALID_INPUT, `invalid contract: the memory starts at ${min.value} pages, the cap is ${maxPages}`)
    memory = { min: min.value, max }
    const body = [...writeU32(1), 0x01, ...writeU32(min.value), ...writeU32(max)]
    out.push(MEMORY_SECTION, ...writeU32(body.length), ...body)
    at = end
  }
  if (memory === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid contract: the module defines no memory')
  if (exports.has(FUEL_EXPORT)) throw new RbtError(ErrorCode.INVALID_INPUT, `invalid contract: the export name ${FUEL_EXPORT} is reserved`)
  const capped = new Uint8Array(out)
  const metered = fuel === undefined ? capped : injectFuel(capped, BigInt(fuel))
  if (!WebAssembly.validate(metered)) throw new RbtError(ErrorCode.INTERNAL, 'capping the memory and metering the contract produced an invalid module')
  return { binary: metered, memory }
}
