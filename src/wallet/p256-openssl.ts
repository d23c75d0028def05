/**
 * P-256 ECDSA verification over a raw digest with OpenSSL's scalar multiplication.
 *
 * node:crypto cannot verify a raw digest (it hashes first), but its ECDH multiplies points in
 * native code: `setPrivateKey(k)` + `getPublicKey()` gives k·G with both coordinates, and
 * `computeSecret(P)` gives the x coordinate of k·P. Verification needs x(u1·G + u2·Q), which is
 *
 *     u1·G + u2·Q = u2·(Q + (u1/u2)·G),   u1/u2 = e·r⁻¹ (mod n),   u2 = r·s⁻¹ (mod n)
 *
 * so one fixed-base multiplication, one affine addition in JavaScript and one variable-base
 * multiplication give exactly the point the ECDSA rule checks; nothing is approximated. The
 * cases this does not handle (Q + (u1/u2)·G is a doubling or the point at infinity) return
 * undefined, and the caller uses its own arithmetic for them.
 *
 * Only public values pass through here (the "private keys" are the verification scalars), so
 * the variable-time parts in JavaScript leak nothing. decisions/0015 has the measurements.
 */
import { createECDH, type ECDH } from 'node:crypto'

/** P-256's field prime and group order. */
const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn
const N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n

let fixed: ECDH | undefined
let variable: ECDH | undefined
let available: boolean | undefined

const mod = (a: bigint, m: bigint): bigint => { const r = a % m; return r < 0n ? r + m : r }

/** a⁻¹ mod m (m prime, a ≠ 0 mod m), by the extended Euclidean algorithm. */
function inv (a: bigint, m: bigint): bigint {
  let [r0, r1] = [mod(a, m), m]
  let [s0, s1] = [1n, 0n]
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1] = [r1, r0 - q * r1];
    [s0, s1] = [s1, s0 - q * s1]
  }
  return mod(s0, m)
}

// hex text is the fastest way between bigint and bytes in V8
function toBytes32 (x: bigint, out: Buffer, offset: number): void {
  out.write(x.toString(16).padStart(64, '0'), offset, 32, 'hex')
}

function fromBytes (b: Buffer, start: number, end: number): bigint {
  return BigInt('0x' + b.toString('hex', start, end))
}

const scalar = Buffer.alloc(32)
const point = Buffer.alloc(65)

/** Whether this Node's OpenSSL offers P-256 ECDH (it always should; checked once). */
export function p256OpensslAvailable (): boolean {
  if (available === undefined) {
    try {
      fixed = createECDH('prime256v1')
      variable = createECDH('prime256v1')
      available = true
    } catch {
      available = false
    }
  }
  return available
}

/**
 * True when x(u1·G + u2·Q) ≡ r (mod n) for u1 = e·s⁻¹ and u2 = r·s⁻¹: the ECDSA rule, for a digest
 * already reduced to `e` (0 ≤ e < n), r and s in [1, n−1], and the public key Q = (qx, qy) on the
 * curve. Undefined when OpenSSL is unavailable or for the rare inputs left to the caller.
 */
export function p256VerifyOpenssl (e: bigint, r: bigint, s: bigint, qx: bigint, qy: bigint): boolean | undefined {
  if (!p256OpensslAvailable()) return undefined
  try {
    // r⁻¹ and s⁻¹ from one inversion: (rs)⁻¹·s = r⁻¹, (rs)⁻¹·r = s⁻¹
    const rsInv = inv(r * s, N)
    const u2 = mod(r * r * rsInv, N)
    const k = mod(e * s * rsInv, N)
    let tx = qx
    let ty = qy
    if (k !== 0n) {
      // K = k·G, then T = K + Q
      toBytes32(k, scalar, 0)
      fixed!.setPrivateKey(scalar)
      const K = fixed!.getPublicKey()
      const kx = fromBytes(K, 1, 33)
      const ky = fromBytes(K, 33, 65)
      if (kx === qx) return undefined // K = Q (a doubling) or K = −Q (T at infinity)
      const l = mod((ky - qy) * inv(kx - qx, P), P)
      tx = mod(l * l - kx - qx, P)
      ty = mod(l * (kx - tx) - ky, P)
    }
    point[0] = 4
    toBytes32(tx, point, 1)
    toBytes32(ty, point, 33)
    toBytes32(u2, scalar, 0)
    variable!.setPrivateKey(scalar)
    const x = fromBytes(variable!.computeSecret(point), 0, 32)
    return mod(x, N) === r
  } catch {
    return undefined
  }
}
