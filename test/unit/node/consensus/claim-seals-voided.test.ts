import { expect } from 'chai'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { peerKey, claimsAt, paidToBob, sealedAt, sealRpc } from './committee-fixture.js'

/**
 * An owner voids a payment after it was accepted. Seven seats (f = 2, q(7) = 5). T1 pays bob and is
 * certified by the signers' seals of seats 0..4, seat 4 being the owner's (one lying seat). Seats 5
 * and 6 (honest) were never asked: the owner claims the state there for T2 and seals it with his own
 * quorums, so they honestly answer "sealed to T2". Seat 4 then answers "sealed to T2" with
 * committed: true and no signed seal. When bob pays dave, dave's check of the earlier block T1 sees
 * 4 seals (< q) and 3 = f + 1 "sealed to another" answers, and refuses T1 for good: bob's accepted
 * token can never be spent. Only the unsigned `committed` of the one lying seat tips it.
 */
describe('claims: one lying seat voids an accepted payment through an unsigned committed answer', () => {
  // Was open (bob's token frozen): the "sealed to another" count took an arbiter's `committed` on
  // its word. Now a "sealed to another" counts only signed, and bob's delivery carries T1's
  // certificate, which q(n) seals make stand whatever one liar says.
  it('a later receiver does not refuse an earlier block that was certified and accepted', async function () {
    this.timeout(10_000)
    const { seats, state: STATE, t1: T1, committee, certificate } = await paidToBob('voided')
    const t1 = [{ stateHash: STATE, holder: T1 }]
    const T2 = sha3Hex('the owner second spend at the never-asked seats')
    // the owner's quorums claim and seal the state for T2 at the two honest seats never asked for T1
    expect(await sealedAt(seats, [5, 6], STATE, T2), 'seats 5 and 6 sealed to T2').to.have.length(2)
    // the owner's seat 4 now says "sealed to T2", with no signed seal
    const liar = seats[4]!.peer
    const rpc = sealRpc(seats, (peer) => peer === liar ? () => ({ sealed: false, holder: T2, committed: true }) : undefined)
    // bob pays dave: dave checks the earlier block T1
    const dave = claimsAt((await peerKey()).peer, { committee, rpc })
    const r = await dave.priorSeals!(t1)
    expect(r.refused, 'T1 was certified and accepted by bob').to.equal(undefined)
    // bob's delivery carries the certificate he accepted: T1 stands, no arbiter needs asking
    const carried = await dave.priorSeals!(t1, { carried: certificate })
    expect(carried.refused).to.equal(undefined)
    expect(carried.unanswered).to.equal(undefined)
    expect(carried.seals?.length).to.equal(5)
  })

  // Was open (a double pay): the check accepted once q(n) arbiters answered and neither refusal
  // rule held, so f liars saying "nobody holds it" plus one silent honest seat hid the state sealed
  // to T1. Now an earlier block that a counted arbiter contests (signed, sealed to another) stands
  // only on q(n) verified seals of its own, carried or gathered.
  it('a laundered earlier block is not accepted when f seats lie and one honest seat is cut off', async function () {
    this.timeout(20_000)
    // T1 certified by seats 0..4 (3 and 4 the owner's); 5 and 6 never asked
    const { seats, state: STATE, committee } = await paidToBob('laundered past a cut link')
    const T2 = sha3Hex('the laundered spend carol is paid after')
    // the owner claims and seals the state for T2 at seats 5 and 6
    const t2 = [{ stateHash: STATE, holder: T2 }]
    await sealedAt(seats, [5, 6], STATE, T2)
    // the owner's seats say nobody holds it; the link from carol to honest seat 2 is cut
    const owners = new Set([seats[3]!.peer, seats[4]!.peer])
    const cut = seats[2]!.peer
    const rpc = sealRpc(seats, (peer) => peer === cut ? () => { throw new Error('unreachable') } : owners.has(peer) ? () => ({ sealed: false }) : undefined)
    const carol = claimsAt((await peerKey()).peer, { committee, rpc })
    const r = await carol.priorSeals!(t2)
    expect(r.refused ?? r.unanswered, 'T2 spent a state certified to T1 (bob); carol must not accept it').to.be.a('string')
  })
})
