/**
 * A size as operators write it: a whole number of bytes, or a number with a unit — decimal
 * (kB, MB, GB, TB: powers of 1000) or binary (KiB, MiB, GiB, TiB: powers of 1024), case-insensitive,
 * `B` optional ("4G" is 4 GiB). Undefined when it is not one.
 */
export function parseByteSize (v: number | string): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : undefined
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)(b?)\s*$/i.exec(v)
  if (m === null) return undefined
  const power = ['', 'k', 'm', 'g', 't'].indexOf(m[2].toLowerCase())
  // "4G" and "4GiB" are binary; "4GB" decimal; a bare number is bytes
  const base = m[2] !== '' && (m[3] !== '' || m[4] === '') ? 1024 : 1000
  const n = Math.round(Number(m[1]) * base ** power)
  return Number.isSafeInteger(n) ? n : undefined
}
