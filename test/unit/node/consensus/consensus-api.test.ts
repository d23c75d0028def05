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
