import { expect } from 'chai'
import { createConsensusApi, type ConsensusApiDeps } from '../../../../src/node/consensus/consensus-api.js'
import { TwoStepEngine } from '../../../../src/node/signing/two-step.js'
import { ErrorCode, RbtError } from '../../../../src/util/errors.js'

const DID = 'bafybmi' + 'q'.repeat(52)

describe('consensus api: quorum setup passwords', () => {
  it('wrong passwords of a quorum setup slow down like a challenge answer: refused unchecked during the delay', async () => {
    let clock = 1_000_000
    const engine = new TwoStepEngine({ now: () => clock, sweepIntervalMs: 0 })
    let checks = 0
    const service = {
      setupQuorum: async (_did: string, password: string) => {
        checks++
        if (password !== 'right') throw new RbtError(ErrorCode.WRONG_PASSWORD, 'Failed to setup quorum, wrong password')
      }
    }
    const api = createConsensusApi({ service: () => service, twoStep: engine } as unknown as ConsensusApiDeps)
    const code = async (pw: string): Promise<string | undefined> => await api.quorumsSetup(DID, pw, pw).then(() => undefined, (e: RbtError) => e.code)
    try {
      for (let i = 0; i < 3; i++) expect(await code(`guess${i}`)).to.equal(ErrorCode.WRONG_PASSWORD)
      expect(await code('right')).to.equal(ErrorCode.TOO_MANY_REQUESTS)
      expect(checks, 'the fourth was not checked').to.equal(3)
      clock += 1000
      expect(await code('right')).to.equal(undefined)
      expect(await code('wrong')).to.equal(ErrorCode.WRONG_PASSWORD)
    } finally { engine.stop() }
  })
})

describe('consensus api: the final message of a transfer', () => {
  it("referenceMessage gives the reference's words with the transaction id after trnxid; without it the /svc/v1 text", async () => {
    const TX = 'ab'.repeat(32)
    const sent: Array<{ fts?: unknown }> = []
    const api = createConsensusApi({
      service: () => ({ transfer: async (input: { fts?: unknown }) => { sent.push(input); return { txid: TX, delivered: true } } }),
      identity: { record: async () => ({ type: 4 }), isLocal: async () => true },
      // runs the operation at once, as a completed challenge would
      twoStep: { start: async (_did: string, _mode: number, op: (prompt: unknown) => Promise<unknown>) => await op(undefined) }
    } as unknown as ConsensusApiDeps)
    const BOB = 'bafybmi' + 'r'.repeat(52)
    expect((await api.transfer({ initiator: DID, owner: BOB, rbt: 1 })).message).to.equal(`Transaction ${TX} completed successfully`)
    expect((await api.transfer({ initiator: DID, owner: BOB, rbt: 1, referenceMessage: true })).message).to.match(new RegExp(`^Transfer finished successfully in \\d+\\.\\ds with trnxid ${TX}$`))
    const ft = await api.transfer({ initiator: DID, owner: BOB, rbt: 0, hasFt: true, referenceMessage: true, ft: [{ ftName: 'gold', numberOfFts: 1, creatorDID: DID }] })
    expect(ft.message).to.match(new RegExp(`^FT Transfer finished successfully in \\d+\\.\\ds with trnxid ${TX}$`))
  })
})
