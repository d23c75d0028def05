import { expect } from 'chai'
import { generateProof, powSeed } from '../../../src/consensus/unpledge-pow.js'
import { PowVerifier } from '../../../src/consensus/unpledge-pow-verifier.js'
import { sha3Hex } from '../../../src/tokenchain/hash.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'

const token = 'Qm' + 'a'.repeat(44)
const pledger = 'bafybmi' + 'c'.repeat(52)
const txid = sha3Hex('tx')
const expectFor = { token, pledger, txid }
/** a fake proof that costs `every` hashes before it is found wrong */
const slowProof = (every: number): { token: string, pledger: string, txid: string, level: number, every: number, hashes: string[] } =>
  ({ token, pledger, txid, level: 2, every, hashes: [powSeed(token, pledger, txid), 'a'.repeat(64), '0'.repeat(62) + txid.slice(-2)] })

describe('unpledge proof verification in worker threads', function () {
  this.timeout(30_000)
  let v: PowVerifier | undefined
  afterEach(async () => { await v?.close(); v = undefined })

  it('gives the same answers as verifyProof', async () => {
    v = new PowVerifier()
    const proof = await generateProof(token, pledger, txid, { level: 2, every: 10 })
    expect(await v.verify(proof, expectFor, { minLevel: 2, full: true })).to.deep.equal({ valid: true })
    expect(await v.verify(proof, expectFor, { minLevel: 3 })).to.deep.equal({ valid: false, reason: 'level 2 is below the required 3' })
    expect(await v.verify(proof, { ...expectFor, pledger: 'other' }, { minLevel: 2 })).to.deep.include({ valid: false })
    expect(await v.verify(null as never, expectFor)).to.deep.equal({ valid: false, reason: 'not a proof' })
  })

  it('a check that runs out of time is a rejected proof', async () => {
    v = new PowVerifier({ timeLimitMs: 150 })
    const r = await v.verify(slowProof(1_000_000), expectFor, { minLevel: 2 })
    expect(r).to.deep.equal({ valid: false, reason: 'verification took longer than 150 ms' })
  })

  it('runs at most `concurrency` checks, queues a bounded number, refuses the rest as busy', async () => {
    v = new PowVerifier({ concurrency: 1, maxQueued: 1, timeLimitMs: 10_000 })
    const first = v.verify(slowProof(200_000), expectFor, { minLevel: 2 })
    const second = v.verify(slowProof(10), expectFor, { minLevel: 2 })
    try {
      await v.verify(slowProof(10), expectFor, { minLevel: 2 })
      expect.fail('a third check should be refused')
    } catch (e) {
      expect(e).to.be.instanceOf(RbtError)
      expect((e as RbtError).code).to.equal(ErrorCode.TOO_MANY_REQUESTS)
      expect((e as RbtError).message).to.match(/busy/)
    }
    expect((await first).reason).to.match(/segment 0/)
    expect((await second).reason).to.match(/segment 0/)
    // the slots are free again
    expect((await v.verify(slowProof(10), expectFor, { minLevel: 2 })).valid).to.equal(false)
  })
})
