import { expect } from 'chai'
import { readFile } from 'node:fs/promises'
import { ContractEngine, stateHash } from '../../../src/contracts/sandbox.js'
import { prepareModule } from '../../../src/contracts/wasm-module.js'
import { compileWat, exampleContract } from '../../../src/contracts/build-examples.js'
import { RbtError } from '../../../src/util/errors.js'

/** A minimal ABI v1 module whose execute body is `body` (it may use $alloc). */
export const abiModule = (body: string, memory = '(memory (export "memory") 1)'): string => `(module
  ${memory}
  (global $heap (mut i32) (i32.const 1024))
  (func $alloc (export "alloc") (param $n i32) (result i32) (local $p i32)
    (local.set $p (global.get $heap)) (global.set $heap (i32.add (global.get $heap) (local.get $n))) (local.get $p))
  (func (export "execute") (param $sp i32) (param $sl i32) (param $ip i32) (param $il i32) (result i32)
    ${body}))`

const TRAP = abiModule('unreachable')
const LOOP = abiModule('(loop $forever (br $forever)) (i32.const 0)')
const BOMB = abiModule('(block $full (loop $grow (br_if $full (i32.eq (memory.grow (i32.const 16)) (i32.const -1))) (br $grow))) unreachable')
const DEEP = abiModule('(call 1 (local.get $sp) (local.get $sl) (local.get $ip) (local.get $il))')

describe('contracts: engine (ABI v1, sandbox, limits)', function () {
  this.timeout(60_000)
  const engine = new ContractEngine()
  let counter: Uint8Array
  let voting: Uint8Array

  before(async () => {
    counter = new Uint8Array(await readFile((await exampleContract('counter')).wasm))
    voting = new Uint8Array(await readFile((await exampleContract('voting')).wasm))
  })

  it('the counter starts at 0 and adds {"increment": n}', async () => {
    expect(await engine.run(counter, '', '')).to.deep.equal({ kind: 'ok', state: '0', output: '{"count":0}' })
    expect(await engine.run(counter, '0', '{"increment": 5}')).to.deep.equal({ kind: 'ok', state: '5', output: '{"count":5}' })
    expect(await engine.run(counter, '5', '{"increment":-7}')).to.deep.equal({ kind: 'ok', state: '-2', output: '{"count":-2}' })
  })

  it('the counter rejects other input and a state that is not a count', async () => {
    expect(await engine.run(counter, '5', '{"add": 1}')).to.deep.include({ kind: 'rejected', status: 2 })
    expect(await engine.run(counter, 'five', '{"increment": 1}')).to.deep.include({ kind: 'rejected', status: 1 })
  })

  it('the voting contract tallies yes and no', async () => {
    const s0 = await engine.run(voting, '', '')
    expect(s0).to.deep.equal({ kind: 'ok', state: '{"yes":0,"no":0}', output: '{"yes":0,"no":0}' })
    expect(await engine.run(voting, '{"yes":0,"no":0}', '{"vote": "yes"}')).to.deep.include({ state: '{"yes":1,"no":0}' })
    expect(await engine.run(voting, '{"yes":1,"no":0}', '{"vote":"no"}')).to.deep.include({ state: '{"yes":1,"no":1}' })
    expect(await engine.run(voting, '{"yes":1,"no":1}', '{"vote":"maybe"}')).to.deep.include({ kind: 'rejected' })
  })

  it('is deterministic: the same call gives the same state hash every time and in parallel', async () => {
    const runs = await Promise.all(Array.from({ length: 6 }, async () => await engine.run(counter, '41', '{"increment": 1}')))
    const hashes = new Set(runs.map((r) => (r.kind === 'ok' ? stateHash(r.state) : r.kind)))
    expect([...hashes]).to.deep.equal([stateHash('42')])
  })

  it('a trap fails the call', async () => {
    const o = await engine.run(await compileWat('trap', TRAP), '1', '{}')
    expect(o.kind).to.equal('trap')
  })

  it('an infinite loop runs out of fuel: the same outcome on every run', async () => {
    const loop = await compileWat('loop', LOOP)
    const outcomes = await Promise.all([1, 2, 3].map(async () => await engine.run(loop, '1', '{}')))
    expect(outcomes.map((o) => o.kind)).to.deep.equal(['fuel', 'fuel', 'fuel'])
  })

  it('fuel counts loop iterations and calls: a bounded loop within the budget completes, a longer one does not', async () => {
    const counting = (n: number): string => abiModule(`(local $i i32) (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1))) (br_if $l (i32.lt_u (local.get $i) (i32.const ${n})))) (i32.store (i32.const 0) (i32.const 0)) (i32.const 0)`)
    const small = new ContractEngine({ fuel: 1000 })
    expect((await small.run(await compileWat('c990', counting(990)), '', '')).kind).to.equal('ok')
    expect((await small.run(await compileWat('c1000', counting(1000)), '', '')).kind).to.equal('fuel')
  })

  it('without enough fuel to stop it, an endless loop is stopped by the time limit', async () => {
    const t0 = Date.now()
    const o = await new ContractEngine({ timeMs: 500, fuel: 1e15 }).run(await compileWat('loop', LOOP), '1', '{}')
    expect(o.kind).to.equal('timeout')
    expect(Date.now() - t0).to.be.lessThan(20_000)
  })

  it('metering adds an exported fuel global; a module using the reserved name is refused', async () => {
    const m = prepareModule(await compileWat('loop', LOOP), 256, 5)
    expect(WebAssembly.Module.exports(new WebAssembly.Module(m.binary)).map((e) => e.name)).to.include('__rbt_fuel')
    const squatter = await compileWat('sq', abiModule('(i32.const 0)').replace('(global $heap', '(global (export "__rbt_fuel") (mut i64) (i64.const 0)) (global $heap'))
    expect(() => prepareModule(squatter, 256, 5)).to.throw(RbtError, /reserved/)
  })

  it('a memory bomb meets the page cap (memory.grow fails) and traps', async () => {
    const o = await engine.run(await compileWat('bomb', BOMB), '1', '{}')
    expect(o.kind).to.equal('trap')
  })

  it('unbounded recursion traps (stack exhausted)', async () => {
    const o = await engine.run(await compileWat('deep', DEEP), '', '')
    expect(o.kind).to.equal('trap')
  })

  it('a module without a memory maximum is capped; one starting above the cap is refused', async () => {
    const capped = prepareModule(await compileWat('bomb', BOMB), 256)
    expect(capped.memory).to.deep.equal({ min: 1, max: 256 })
    const small = prepareModule(await compileWat('max', abiModule('(i32.const 0)', '(memory (export "memory") 1 4)')), 256)
    expect(small.memory).to.deep.equal({ min: 1, max: 4 })
    expect(() => prepareModule(small.binary, 0)).to.throw(RbtError, /memory starts at 1 pages/)
  })

  it('refuses imports, missing exports and bytes that are not WebAssembly', async () => {
    const withImport = await compileWat('imp', '(module (import "env" "now" (func)) (memory (export "memory") 1) (func (export "alloc") (param i32) (result i32) (i32.const 0)) (func (export "execute") (param i32 i32 i32 i32) (result i32) (i32.const 0)))')
    expect(() => { engine.check(withImport) }).to.throw(RbtError, /allows no imports.*env\.now/)
    const noExecute = await compileWat('noexec', '(module (memory (export "memory") 1) (func (export "alloc") (param i32) (result i32) (i32.const 0)))')
    expect(() => { engine.check(noExecute) }).to.throw(RbtError, /"execute"/)
    expect(() => { engine.check(new TextEncoder().encode('fn main() {}')) }).to.throw(RbtError, /bad magic/)
    expect(() => { engine.check(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 0xff])) }).to.throw(RbtError, /does not validate/)
  })

  it('a result record outside memory or with bad UTF-8 breaks the ABI', async () => {
    const outside = await engine.run(await compileWat('out', abiModule('(i32.const -4)')), '', '')
    expect(outside.kind).to.equal('invalid')
    const badUtf8 = abiModule('(i32.store8 (i32.const 100) (i32.const 255)) (i32.store (i32.const 200) (i32.const 0)) (i32.store (i32.const 204) (i32.const 100)) (i32.store (i32.const 208) (i32.const 1)) (i32.store (i32.const 212) (i32.const 100)) (i32.store (i32.const 216) (i32.const 1)) (i32.const 200)')
    expect((await engine.run(await compileWat('utf8', badUtf8), '', '')).kind).to.equal('invalid')
  })
})
