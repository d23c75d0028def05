import '../src/util/polyfill.js'
import { performance } from 'node:perf_hooks'
import { closeQuorumNetwork, createLiteDid, mintRbt, quorumNetwork, rbtBalance, transfer, USER_PASSWORD } from '../test/helpers/quorum-network.js'
import { isMain, median } from './stats.js'

/**
 * Part tokens on real nodes (7 quorums, a sender and a receiver over libp2p): what a payment costs
 * as its token's ancestry grows, what one transfer of many parts costs, and a balance of many parts.
 *
 * - transfer_ms_depth_1: payments of 0.001 RBT each from a fresh whole token (the part paid has
 *   one ancestor), median of 5.
 * - transfer_ms_depth_1000: one DID pays 0.001 RBT 999 times in a row out of one whole token, so
 *   the part of each payment has one ancestor more than the last; the figure is the median of the
 *   last 5 (999 ancestors: the most a part can have, every part being worth at least 0.001 RBT
 *   less than its parent). BENCH_DEPTH sets how many payments (default 999).
 * - transfer_300_parts_ms: a DID that received 300 of those payments spends 0.3 RBT: one
 *   transfer of 300 parts; transfer_1_part_ms: a one-part payment from a DID that received 5.
 * - balance_ms_300_parts: GET balance of the DID holding 300 parts, median of 20.
 */
export async function run (): Promise<Record<string, string | number>> {
  const DEPTH = Math.max(320, Number(process.env.BENCH_DEPTH ?? 999))
  const net = await quorumNetwork()
  try {
    const { a, b, bob } = net
    const timed = async (from: string, to: string, amount: number, memo: string): Promise<number> => {
      const t0 = performance.now()
      const r = await transfer(a.client, from, to, amount, USER_PASSWORD, memo)
      const took = performance.now() - t0
      if (!r.status) throw new Error(`${memo}: ${r.message}`)
      return took
    }
    // depth 1: five DIDs, one whole token each, one payment each
    const shallow: number[] = []
    for (let i = 0; i < 5; i++) {
      const d = await createLiteDid(a.client, USER_PASSWORD)
      await mintRbt(a.client, d, 1, 0, USER_PASSWORD)
      shallow.push(await timed(d, bob, 0.001, `depth-1 payment ${i}`))
    }
    // the deep wallet; its first 300 payments go to `many` (on B), the next 5 to `few` (on A), the rest to bob
    const deep = await createLiteDid(a.client, USER_PASSWORD)
    await mintRbt(a.client, deep, 1, 0, USER_PASSWORD)
    const many = await createLiteDid(b.client, USER_PASSWORD)
    const few = await createLiteDid(a.client, USER_PASSWORD)
    await a.client.call('nodeAddPeers', { body: { DID: many, PeerID: b.peerId, DIDType: 4 } })
    await b.client.call('nodeAddPeers', { body: { DID: deep, PeerID: a.peerId, DIDType: 4 } })
    const all: number[] = []
    const t0 = performance.now()
    for (let i = 1; i <= DEPTH; i++) {
      const to = i <= 300 ? many : i <= 305 ? few : bob
      all.push(await timed(deep, to, 0.001, `deep payment ${i}`))
      if (i % 100 === 0) process.stdout.write(`  … ${i} payments, ${((performance.now() - t0) / 1000).toFixed(0)} s\n`)
    }
    const lastFive = all.slice(-5)
    // balance of 300 parts
    const bal: number[] = []
    for (let i = 0; i < 20; i++) {
      const s = performance.now()
      const v = await rbtBalance(b.client, many)
      bal.push(performance.now() - s)
      if (Math.round(v * 1000) !== 300) throw new Error(`the DID of 300 parts shows ${v} RBT`)
    }
    // one part, then 300 parts in one transfer
    const one: number[] = []
    for (let i = 0; i < 3; i++) one.push(await timed(few, bob, 0.001, `one-part payment ${i}`))
    const s300 = performance.now()
    const r300 = await transfer(b.client, many, net.alice, 0.3, USER_PASSWORD, '300 parts')
    const t300 = performance.now() - s300
    if (!r300.status) throw new Error(`300 parts: ${r300.message}`)
    const r1 = (x: number): number => Math.round(x * 10) / 10
    return {
      transfer_ms_depth_1: r1(median(shallow)),
      transfer_ms_depth_1000: r1(median(lastFive)),
      transfer_300_parts_ms: r1(t300),
      transfer_1_part_ms: r1(median(one)),
      balance_ms_300_parts: r1(median(bal)),
      'depth 1000 ÷ depth 1 (goal ≤ 1.5)': (median(lastFive) / median(shallow)).toFixed(2),
      '300 parts ÷ 1 part (goal ≤ 5)': (t300 / median(one)).toFixed(2),
      [`payments of the deep wallet (${DEPTH}): first 5, median`]: `${r1(median(all.slice(0, 5)))} ms`,
      [`payments of the deep wallet (${DEPTH}): all, median`]: `${r1(median(all))} ms`
    }
  } finally {
    await closeQuorumNetwork()
  }
}

if (isMain(import.meta.url)) console.log(await run())
