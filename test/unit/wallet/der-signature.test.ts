import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { compare, parseDerSignature, subtract } from '../../../src/wallet/der-signature.js'

const N = secp256k1.Point.Fn.ORDER
const b32 = (x: bigint): Uint8Array => Uint8Array.from(Buffer.from(x.toString(16).padStart(64, '0'), 'hex'))
const ORDER = b32(N)

/** What noble makes of the bytes: the [r, s] it accepts, or undefined where it throws. */
function noble (sig: Uint8Array): [bigint, bigint] | undefined {
  try {
    const s = secp256k1.Signature.fromBytes(sig, 'der')
    return [s.r, s.s]
  } catch { return undefined }
}

function ours (sig: Uint8Array): [bigint, bigint] | undefined {
  const rs = parseDerSignature(sig, ORDER)
  if (rs === undefined) return undefined
  const big = (b: Uint8Array): bigint => BigInt('0x' + Buffer.from(b).toString('hex'))
  return [big(rs.r), big(rs.s)]
}

function der (r: Uint8Array, s: Uint8Array): Uint8Array {
  const int = (v: Uint8Array): number[] => [0x02, v.length, ...v]
  const body = [...int(r), ...int(s)]
  return Uint8Array.from([0x30, body.length, ...body])
}

describe('wallet: DER signatures parsed on bytes', () => {
  it('accepts and rejects exactly what noble does, with the same r and s (valid, mutated, truncated, random)', () => {
    let seed = 0x51ed270b
    const rnd = (n: number): number => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) % n }
    const inputs: Uint8Array[] = []
    for (let i = 0; i < 300; i++) {
      const key = secp256k1.utils.randomSecretKey()
      const sig = secp256k1.sign(randomBytes(32), key, { prehash: false, format: 'der', lowS: i % 2 === 0 })
      inputs.push(sig)
      const high = secp256k1.Signature.fromBytes(sig, 'der')
      inputs.push(new secp256k1.Signature(high.r, N - high.s).toBytes('der')) // the other S half
      for (let j = 0; j < 6; j++) {
        const m = sig.slice()
        m[rnd(m.length)] = rnd(256)
        inputs.push(m)
      }
      inputs.push(sig.subarray(0, rnd(sig.length)))
      inputs.push(Uint8Array.from([...sig, rnd(256)]))
    }
    // integers at the edges: zero, one, n − 1, n, a leading zero too many, 33 bytes, negative
    const edges = [new Uint8Array([0]), new Uint8Array([1]), b32(N - 1n), b32(N), new Uint8Array([0, 1]),
      Uint8Array.from([0, ...b32(N - 1n)]), Uint8Array.from([0, 0x80, ...new Uint8Array(31)]), new Uint8Array([0x80]),
      Uint8Array.from([1, ...new Uint8Array(32)]), new Uint8Array(0), Uint8Array.from([0, ...new Uint8Array(33)])]
    for (const r of edges) for (const s of edges) inputs.push(der(r, s))
    // long-form lengths, other tags
    inputs.push(Uint8Array.from([0x30, 0x81, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]))
    inputs.push(Uint8Array.from([0x30, 0x06, 0x02, 0x81, 0x01, 0x01, 0x02, 0x01, 0x01]))
    inputs.push(Uint8Array.from([0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]))
    inputs.push(Uint8Array.from([0x30, 0x06, 0x02, 0x01, 0x01, 0x03, 0x01, 0x01]))
    inputs.push(Uint8Array.from([0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]))
    for (let i = 0; i < 2000; i++) inputs.push(Uint8Array.from(randomBytes(rnd(80))))
    let accepted = 0
    for (const sig of inputs) {
      const a = ours(sig)
      expect(a, Buffer.from(sig).toString('hex')).to.deep.equal(noble(sig))
      if (a !== undefined) accepted++
    }
    expect(accepted).to.be.greaterThan(600)
  })

  it('compares and subtracts 32-byte numbers', () => {
    for (let i = 0; i < 200; i++) {
      const a = BigInt('0x' + randomBytes(32).toString('hex')) % N
      const b = BigInt('0x' + randomBytes(32).toString('hex')) % N
      expect(Math.sign(compare(b32(a), b32(b)))).to.equal(a === b ? 0 : a < b ? -1 : 1)
      expect(Buffer.from(subtract(ORDER, b32(a))).toString('hex')).to.equal(Buffer.from(b32(N - a)).toString('hex'))
    }
  })
})

describe('wallet: secp256k1 points through libsecp256k1', () => {
  it('normalisePoint gives noble\'s 65 bytes for every valid point, and refuses what noble refuses', async () => {
    const { normalisePoint } = await import('../../../src/wallet/keys.js')
    const { nativeBackend, setSecpBackend } = await import('../../../src/wallet/secp-backend.js')
    if (nativeBackend() === undefined) return
    setSecpBackend('native')
    try {
      const nobleForm = (p: Uint8Array): string | undefined => { try { return Buffer.from(secp256k1.Point.fromBytes(p).toBytes(false)).toString('hex') } catch { return undefined } }
      const oursForm = (p: Uint8Array): string | undefined => { try { return Buffer.from(normalisePoint('secp256k1', p)).toString('hex') } catch { return undefined } }
      for (let i = 0; i < 200; i++) {
        const pub = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), i % 2 === 0)
        const bad = pub.slice()
        bad[1 + (i % (pub.length - 1))] ^= 1
        const hybrid = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), false)
        hybrid[0] = 6 + (hybrid[64]! & 1)
        const overP = Uint8Array.from([2, ...new Uint8Array(32).fill(0xff)])
        for (const p of [pub, bad, hybrid, overP]) expect(oursForm(p)).to.equal(nobleForm(p))
      }
    } finally { setSecpBackend(undefined) }
  })
})
