/**
 * Unpledge proof-of-work benchmark: hash rate of the chain, proof generation time per level and
 * the cost of a sampled verification. Level 6 (the reference's) is extrapolated from the rate.
 * `run()` returns the figures; executed directly it prints them.
 */
import { createHash } from 'node:crypto'
import { generateProof, verifyProof } from '../src/consensus/unpledge-pow.js'
import { isMain } from './stats.js'

export async function run (): Promise<Record<string, string | number>> {
  const out: Record<string, string | number> = {}
  const txid = createHash('sha3-256').update('bench transaction').digest('hex')
  let hashes = 0
  let total = 0
  for (const level of [3, 4, 5]) {
    const runs = level === 5 ? 2 : 4
    let ms = 0
    let vms = 0
    let n = 0
    for (let i = 0; i < runs; i++) {
      const token = `bench-token-${level}-${i}`
      const t0 = performance.now()
      const p = await generateProof(token, 'bench-pledger', txid, { level })
      ms += performance.now() - t0
      // checkpoints × interval bounds the chain length from above (the last segment is partial)
      n += (p.hashes.length - 1) * p.every
      const t1 = performance.now()
      if (!verifyProof(p, { token, pledger: 'bench-pledger', txid }, { minLevel: level }).valid) throw new Error('proof did not verify')
      vms += performance.now() - t1
    }
    out[`level${level}_generate_ms`] = Math.round(ms / runs)
    out[`level${level}_verify_sampled_ms`] = Math.round(vms / runs * 10) / 10
    hashes += n
    total += ms
  }
  const rate = hashes / total * 1000
  out.sha3_chain_hashes_per_s = Math.round(rate)
  out.level6_expected_generate_s = Math.round(16 ** 6 / rate)
  return out
}

if (isMain(import.meta.url)) {
  for (const [k, v] of Object.entries(await run())) console.log(`${k}  ${String(v)}`)
}
