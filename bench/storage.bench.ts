/**
 * The store's write path: synced batches through LevelStore, which remembers the latest
 * acknowledged records for the check after a storage fault (decisions/0011).
 * - `batch_synced_per_s`: small synced batches (5 puts of ~300 bytes, a commit's size) per second;
 * - `batch_5000_ops_ms`: one batch of 5,000 puts (a large FT mint's size).
 */
import '../src/util/polyfill.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../src/storage/level-store.js'

export async function run (): Promise<Record<string, string | number>> {
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-bench-storage-'))
  const store = new LevelStore(join(dir, 'db'))
  await store.open()
  try {
    const value = { owner: 'bafybmi'.padEnd(59, 'x'), status: 'Free', latestBlockId: '1-'.padEnd(66, 'a'), value: 1000, updatedAt: 0 }
    const N = 2000
    let t = performance.now()
    for (let i = 0; i < N; i++) {
      await store.batch(Array.from({ length: 5 }, (_, j) => ({ type: 'put' as const, collection: 'tokens', key: `t${i}-${j}`, value })))
    }
    const perS = N / ((performance.now() - t) / 1000)
    t = performance.now()
    await store.batch(Array.from({ length: 5000 }, (_, j) => ({ type: 'put' as const, collection: 'tokens', key: `big-${j}`, value })))
    const bigMs = performance.now() - t
    return { batch_synced_per_s: Math.round(perS), batch_5000_ops_ms: bigMs.toFixed(1) }
  } finally {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
