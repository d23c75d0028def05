/**
 * Buffers of one size handed out and taken back, for bytes that live only until a known moment
 * (a block page until its write completed): each reuse is one allocation outside V8's heap fewer,
 * and such allocations are what V8 collects late (after about 64 MiB of them). A request larger
 * than the pool's size gets a buffer of its own, which `give` ignores, as it ignores anything it
 * did not hand out or that came back already. At most `keep` free buffers are held.
 */
export class BufferPool {
  private readonly free: ArrayBuffer[] = []
  private readonly out = new WeakSet<ArrayBuffer>()

  constructor (readonly size: number, readonly keep: number) {
    if (!Number.isSafeInteger(size) || size <= 0) throw new RangeError(`buffer pool size must be a positive integer, got ${size}`)
  }

  /** Bytes free to hand out now. */
  get held (): number { return this.free.length * this.size }

  /** `bytes` bytes (contents undefined), in a buffer of the pool when they fit. */
  take (bytes: number): Uint8Array {
    if (bytes > this.size) return Buffer.allocUnsafe(bytes)
    const ab = this.free.pop() ?? new ArrayBuffer(this.size)
    this.out.add(ab)
    return new Uint8Array(ab, 0, bytes)
  }

  /** Takes back the buffer under `view` (any view of it); nothing of it may be read or written after. */
  give (view: Uint8Array): void {
    const ab = view.buffer
    if (!(ab instanceof ArrayBuffer) || !this.out.has(ab)) return
    this.out.delete(ab)
    if (this.free.length < this.keep) this.free.push(ab)
  }
}
