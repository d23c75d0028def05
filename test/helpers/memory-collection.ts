import type { Collection } from '../../src/storage/kv-store.js'

/** A store collection in memory (a node's are LevelDB): entries in insertion order, no ranges. */
export function memoryCollection<V> (name = 'memory'): Collection<V> & { map: Map<string, V> } {
  const map = new Map<string, V>()
  return {
    map,
    name,
    get: async (k) => map.get(k),
    getMany: async (ks) => ks.map((k) => map.get(k)),
    put: async (k, v) => { map.set(k, v) },
    del: async (k) => { map.delete(k) },
    entries: async function * () { for (const e of [...map]) yield e },
    keys: async function * () { for (const k of [...map.keys()]) yield k },
    count: async () => map.size
  }
}
