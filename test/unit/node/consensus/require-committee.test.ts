import { expect } from 'chai'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { claimsAt, peerKey } from './committee-fixture.js'

/**
 * A node that counts only arbiter seats (`require_committee`, docs/security.md, "Before the
 * committee"): while no committee is in force the peers of its view would be a state's arbiters,
 * and peer ids cost nothing, so it claims, checks grants, takes certificates and earlier blocks of
 * nothing, and says why. A registration's stake is still probed at the view (no committee could
 * form otherwise). Once the committee stands, nothing is refused for this reason.
 */
describe('claims: a node that requires the arbiter committee', () => {
  const STATE = sha3Hex('a state')
  const TX = sha3Hex('a transaction')
  const build = async (seats: () => string[] | undefined, requireCommittee = true): Promise<{ claims: ReturnType<typeof claimsAt>, asked: string[] }> => {
    const view = await Promise.all(Array.from({ length: 6 }, async () => (await peerKey()).peer))
    const asked: string[] = []
    const rpc = { call: async (peer: string, method: string, req: { items: unknown[] }) => { asked.push(method); if (method === 'claims.seal') return { answers: req.items.map(() => ({ sealed: false })) }; throw new Error(`${peer}: ${method} not served`) } } as unknown as RpcClient<never>
    return { claims: claimsAt((await peerKey()).peer, { rpc, view, committee: seats, requireCommittee }), asked }
  }

  it('refuses, while no committee is in force, every step that would count the view\'s peers, and asks none of them', async () => {
    const { claims, asked } = await build(() => undefined)
    const claimed = await claims.claimFor(TX, [{ quorum: 'bafybmiq1', nonce: '00'.repeat(16), sig: 'ab' }], [STATE], [], new Uint8Array([1]))
    expect(claimed.granted).to.equal(false)
    expect(!claimed.granted && claimed.reason).to.match(/no arbiter committee is in force yet.*require_committee/)
    const grants = await claims.checkGrants(TX, 'bafybmiq1', [STATE], [], [])
    expect(!grants.granted && grants.code).to.equal('CLAIM_UNREACHABLE')
    const cert = await claims.checkSeals!([{ stateHash: STATE, holder: TX }], [])
    expect(!cert.granted && cert.reason).to.match(/no arbiter committee is in force yet/)
    const earlier = await claims.priorSeals!([{ stateHash: STATE, holder: TX }])
    expect(earlier.unanswered).to.match(/no arbiter committee is in force yet/)
    expect(asked, 'no peer of the view was asked anything').to.deep.equal([])
    // a registration's stake is still probed at the view's peers
    await claims.priorSeals!([{ stateHash: STATE, holder: TX }], { stake: true })
    expect(asked).to.include('claims.seal')
  })

  it('refuses nothing for this once the committee is in force, nor while none is when not required', async () => {
    const seats = await Promise.all([0, 1, 2, 3].map(async () => (await peerKey()).peer))
    const inForce = (await build(() => seats)).claims
    const r = await inForce.priorSeals!([{ stateHash: STATE, holder: TX }])
    expect(r.unanswered ?? '').to.not.match(/no arbiter committee/)
    const notRequired = (await build(() => undefined, false)).claims
    const cert = await notRequired.checkSeals!([{ stateHash: STATE, holder: TX }], [])
    expect(!cert.granted && cert.reason).to.not.match(/no arbiter committee/)
  })
})
