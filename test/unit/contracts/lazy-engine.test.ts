import { expect } from 'chai'
import { LazyContractEngine } from '../../../src/contracts/lazy-engine.js'
import { RbtError } from '../../../src/util/errors.js'

describe('contracts: the engine loaded on first use', () => {
  it('checks and runs as the engine does once it has loaded', async () => {
    const engine = new LazyContractEngine()
    let err: unknown
    try { await engine.check(new TextEncoder().encode('fn main() {}')) } catch (e) { err = e }
    expect(err).to.be.instanceOf(RbtError)
    expect((err as Error).message).to.match(/bad magic/)
    const outcome = await engine.run(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 0xff]), '', '')
    expect(outcome.kind).to.equal('invalid')
  })
})
