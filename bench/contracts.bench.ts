/**
 * Contract engine benchmark: one call of the example counter (fresh worker thread, fresh instance,
 * as every party runs it), calls in parallel (7 quorums on one machine), module checks with the
 * memory rewrite and fuel injection, and how long an infinite loop takes to use up the default fuel.
 * `run()` returns the figures; executed directly it prints them.
 */
import { readFile } from 'node:fs/promises'
import { ContractEngine } from '../src/contracts/sandbox.js'
import { prepareModule } from '../src/contracts/wasm-module.js'
import { compileWat, exampleContract } from '../src/contracts/build-examples.js'
import { isMain, median, ms, percentile } from './stats.js'

export async function run (): Promise<Record<string, string | number>> {
  const counter = new Uint8Array(await readFile((await exampleContract('counter')).wasm))
  const engine = new ContractEngine()
  await engine.run(counter, '', '')
  const single: number[] = []
  for (let i = 0; i < 20; i++) {
    const t = performance.now()
    await engine.run(counter, String(i), '{"increment": 1}')
    single.push(performance.now() - t)
  }
  const t7 = performance.now()
  await Promise.all(Array.from({ length: 7 }, async () => await engine.run(counter, '1', '{"increment": 1}')))
  const seven = performance.now() - t7
  const checks: number[] = []
  for (let i = 0; i < 200; i++) {
    const t = performance.now()
    prepareModule(counter, 256, 10_000_000)
    checks.push(performance.now() - t)
  }
  const loop = await compileWat('loop', '(module (memory (export "memory") 1) (func (export "alloc") (param i32) (result i32) (i32.const 64)) (func (export "execute") (param i32 i32 i32 i32) (result i32) (loop $l (br $l)) (i32.const 0)))')
  const tl = performance.now()
  const o = await engine.run(loop, '', '')
  const stopped = performance.now() - tl
  return {
    'counter module size': `${counter.length} bytes`,
    'one call (worker + instance), median': ms(median(single)),
    'one call, p95': ms(percentile(single, 95)),
    '7 calls in parallel, total': ms(seven),
    'module check + memory cap + fuel injection, median': ms(median(checks)),
    'infinite loop ended by fuel (10M units) after': `${ms(stopped)} (${o.kind})`
  }
}

if (isMain(import.meta.url)) {
  for (const [k, v] of Object.entries(await run())) process.stdout.write(`${k}: ${String(v)}\n`)
}
