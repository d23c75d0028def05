// Node 20 lacks Promise.withResolvers (added in Node 22); several js-libp2p dependencies call it.
// This module must be imported before anything that loads libp2p.
type Resolvers<T> = { promise: Promise<T>, resolve: (v: T | PromiseLike<T>) => void, reject: (e?: unknown) => void }
const P = Promise as unknown as { withResolvers?: <T>() => Resolvers<T> }
if (typeof P.withResolvers !== 'function') {
  P.withResolvers = function withResolvers<T> (): Resolvers<T> {
    let resolve!: (v: T | PromiseLike<T>) => void
    let reject!: (e?: unknown) => void
    const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}
export {}
