/**
 * A small seeded PRNG (sfc32 state, seeded through splitmix32) for the chaos run: the same seed
 * gives the same sequence on every machine, so a run's operations and faults can be replayed.
 * Not for cryptography.
 */
export class Prng {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor (readonly seed: number) {
    let s = seed >>> 0
    const split = (): number => {
      s = (s + 0x9e3779b9) >>> 0
      let z = s
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
      return (z ^ (z >>> 16)) >>> 0
    }
    this.a = split()
    this.b = split()
    this.c = split()
    this.d = split()
    // the first outputs of sfc32 are weakly mixed: discard a few
    for (let i = 0; i < 12; i++) this.u32()
  }

  /** A uniform 32-bit unsigned integer. */
  u32 (): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0
    this.d = (this.d + 1) >>> 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) >>> 0
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0
    this.c = (this.c + t) >>> 0
    return t
  }

  /** A float in [0, 1). */
  next (): number { return this.u32() / 0x1_0000_0000 }

  /** An integer in [lo, hi] (both included). */
  int (lo: number, hi: number): number {
    if (hi < lo) throw new Error(`empty range [${lo}, ${hi}]`)
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }

  /** True with probability p. */
  chance (p: number): boolean { return this.next() < p }

  pick<T> (items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list')
    return items[Math.floor(this.next() * items.length)]!
  }

  /** An independent stream derived from this seed and a label (same seed and label → same stream). */
  fork (label: string): Prng {
    let h = 0x811c9dc5 ^ this.seed
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193)
    return new Prng(h >>> 0)
  }
}

/** A fresh seed when none is given (printed at start, so the run can be replayed). */
export function randomSeed (): number {
  return (Date.now() ^ (process.pid << 16) ^ Math.floor(Math.random() * 0x1_0000_0000)) >>> 0
}
