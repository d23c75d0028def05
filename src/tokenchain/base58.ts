/**
 * base58btc (the Bitcoin alphabet, as CIDv0 and the reference's ids use it), encoding only. The
 * number is carried in limbs of 58^5, so a 34-byte multihash takes some 340 steps instead of the
 * 1,500 of a digit-at-a-time encoder: a quorum encodes a token-state CID for every token of every
 * transfer.
 */
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
const LIMB = 58 ** 5
// products stay below 2^53: LIMB * 256 + 255 < 1.7e11

export function base58btcEncode (bytes: Uint8Array): string {
  let zeros = 0
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++
  // little-endian limbs; each byte multiplies the number by 256 and adds itself
  const limbs: number[] = []
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]!
    for (let j = 0; j < limbs.length; j++) {
      const v = limbs[j]! * 256 + carry
      carry = Math.floor(v / LIMB)
      limbs[j] = v - carry * LIMB
    }
    while (carry > 0) {
      const q = Math.floor(carry / LIMB)
      limbs.push(carry - q * LIMB)
      carry = q
    }
  }
  const digits: string[] = []
  for (const limb of limbs) {
    let v = limb
    for (let d = 0; d < 5; d++) {
      const q = Math.floor(v / 58)
      digits.push(ALPHABET[v - q * 58]!)
      v = q
    }
  }
  // the top limb's leading zeros are not digits of the number
  while (digits.length > 0 && digits[digits.length - 1] === '1') digits.pop()
  return '1'.repeat(zeros) + digits.reverse().join('')
}
