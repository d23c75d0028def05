/**
 * The storage engine seam for data that grows (tokens, chain blocks, transactions).
 * A store is split into named collections; `batch` applies puts and deletes across any
 * collections atomically: all of them or none, also when the process dies mid-write.
 */
export type BatchOp =
  | { type: 'put', collection: string, key: string, value: unknown }
  | { type: 'del', collection: string, key: string }

export interface RangeOptions {
  gt?: string
  gte?: string
  lt?: string
  lte?: string
  limit?: number
  reverse?: boolean
  /** shorthand for gte=prefix, lt=prefix+'\uffff' */
  prefix?: string
}

export interface Collection<V = unknown> {
  readonly name: string
  get: (key: string) => Promise<V | undefined>
  getMany: (keys: string[]) => Promise<Array<V | undefined>>
  put: (key: string, value: V) => Promise<void>
  del: (key: string) => Promise<void>
  entries: (opts?: RangeOptions) => AsyncIterable<[string, V]>
  keys: (opts?: RangeOptions) => AsyncIterable<string>
  count: (opts?: RangeOptions) => Promise<number>
}

export interface KvStore {
  collection: <V = unknown>(name: string) => Collection<V>
  /** Atomic multi-collection write. */
  batch: (ops: BatchOp[], opts?: { sync?: boolean }) => Promise<void>
  open: () => Promise<void>
  close: () => Promise<void>
}

export function rangeOf (opts: RangeOptions = {}): Omit<RangeOptions, 'prefix'> {
  const { prefix, ...rest } = opts
  if (prefix !== undefined) return { gte: prefix, lt: prefix + '\uffff', ...rest }
  return rest
}
