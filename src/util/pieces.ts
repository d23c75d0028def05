/**
 * Bytes that arrived in pieces (a stream's reads, a Uint8ArrayList) copied one after the other into
 * a buffer the caller owns (a pooled one, or the memory a cipher opens in place), which must hold
 * exactly their length; `out` is returned.
 */
export function joinPieces (pieces: Iterable<Uint8Array>, out: Uint8Array): Uint8Array {
  let at = 0
  for (const p of pieces) {
    if (at + p.byteLength > out.byteLength) throw new RangeError(`pieces of more than ${out.byteLength} bytes cannot be joined into ${out.byteLength}`)
    out.set(p, at)
    at += p.byteLength
  }
  if (at !== out.byteLength) throw new RangeError(`pieces of ${at} bytes cannot be joined into ${out.byteLength}`)
  return out
}
