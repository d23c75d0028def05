import { expect } from 'chai'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { peerKey, claimsAt, seatsOf, sealedAt, sealRpc, SIGNER_QUORUMS } from './committee-fixture.js'

/**
 * The "nobody holds it" exception after one seat changed. Seven seats (f = 2, q(7) = 5): 0, 1, 2
 * honest, 3 and 4 the owner's, 5 and 6 honest. T1 pays bob, decided on the signers' own seals at
 * seats 0..4, so 5 and 6 hold no record of the state. Then honest seat 2 leaves and a new honest
 * seat 7 takes its place (it holds no record either). The owner launders a second spend T2 of the
 * same state (his quorums' block, never sealed) to carol. At carol, seats 0 and 1 sign the state
 * sealed to T1 (a contest, f of them), and 3, 4 (lying), 5, 6, 7 answer that nobody holds it: five
 * = q(n) "nobody" answers waive the contest, f signed contests refuse nothing, and all seven
 * answered. Carol accepts T2: the state is paid twice.
 */
describe('claims: a contested earlier block after a seat change', () => {
  it('HOLE f lying "nobody" answers plus the honest seats a signers\' own decision left without a record, and one new seat, waive a signed contest', async function () {
    this.timeout(20_000)
    const seats = await seatsOf(8)
    const STATE = sha3Hex('a state of the owner: seat change')
    const T1 = sha3Hex('the spend bob accepted: seat change')
    const before = (): string[] => seats.slice(0, 7).map((s) => s.peer)
    const certificate = await sealedAt(seats, [0, 1, 2, 3, 4], STATE, T1, SIGNER_QUORUMS)
    const bob = claimsAt((await peerKey()).peer, { committee: before })
    expect((await bob.checkSeals!([{ stateHash: STATE, holder: T1 }], certificate)).granted, 'bob accepts T1').to.equal(true)
    // seat 2 leaves, seat 7 is seated
    const after = (): string[] => [0, 1, 3, 4, 5, 6, 7].map((i) => seats[i]!.peer)
    // the owner's seats say nobody holds the state; the honest seats answer themselves
    const owners = new Set([seats[3]!.peer, seats[4]!.peer])
    const rpc = sealRpc(seats, (peer) => owners.has(peer) ? () => ({ sealed: false }) : undefined)
    const T2 = sha3Hex('the laundered second spend: seat change')
    const carol = claimsAt((await peerKey()).peer, { committee: after, rpc })
    const r = await carol.priorSeals!([{ stateHash: STATE, holder: T2 }])
    expect(r.refused ?? r.unanswered, 'T2 spent a state sealed to T1, which bob accepted: carol must not accept it').to.be.a('string')
  })
})
