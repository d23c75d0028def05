import { expect } from 'chai'
import crypto from 'node:crypto'
import { syncBuiltinESMExports } from 'node:module'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { claimsAt, peerKey, seatsOf } from './committee-fixture.js'
import { usePeerSignatureBackend } from '../../../../src/p2p/peer-signature.js'

/**
 * Grants in the votes (docs/protocol.md, "Grants in the votes"): a quorum whose node holds a seat
 * of the committee in force grants its own claim in its node's table as it votes, and the grant
 * rides the vote; a signer counts the grants of its fellow signers' claims of the same transaction.
 */
describe('claims: a seat grants its own quorum\'s claim as the quorum votes', () => {
  const T1 = sha3Hex('the spend voted for')
  const T2 = sha3Hex('another spend')
  const STATE = sha3Hex('a token state')
  const quorums = ['bafybmiqa', 'bafybmiqb', 'bafybmiqc', 'bafybmiqd', 'bafybmiqe']
  const nonce = (i: number): string => (0xc0 + i).toString(16).padStart(32, '0')
  const claimant = (i: number): { quorum: string, nonce: string, sig: string } => ({ quorum: quorums[i]!, nonce: nonce(i), sig: 'ab' })

  /** Runs `f` counting the Ed25519 checks made (at node:crypto's verify, where the checks run for this). */
  async function countingChecks<T> (f: () => Promise<T>): Promise<{ result: T, verified: number }> {
    usePeerSignatureBackend('node')
    const original = crypto.verify
    let verified = 0
    crypto.verify = ((...args: Parameters<typeof original>) => { verified++; return original(...args) }) as typeof original
    syncBuiltinESMExports()
    try {
      return { result: await f(), verified }
    } finally {
      crypto.verify = original
      syncBuiltinESMExports()
      usePeerSignatureBackend(undefined)
    }
  }

  it('a seated node grants the claim in its own table and signs it; a node with no seat, or no committee in force, grants nothing and writes nothing', async () => {
    const [seat] = await seatsOf(1)
    const grants = await seat!.claims.grantOwn!(T1, claimant(0), [STATE], [])
    expect(grants).to.have.length(1)
    expect(grants[0]).to.include({ peer: seat!.peer, quorum: quorums[0], nonce: nonce(0), forTx: T1, txid: T1 })
    const rec = (await seat!.claims.table.records([STATE]))[0]
    expect(rec?.txid).to.equal(T1)
    expect(rec?.claimants.map((c) => c.quorum)).to.deep.equal([quorums[0]])
    // the state is this transaction's here now: another is refused it
    expect((await seat!.claims.grantOwn!(T2, claimant(1), [STATE], []))).to.deep.equal([])
    for (const committee of [() => ['some other seat'], () => undefined]) {
      const k = await peerKey()
      const other = claimsAt(k.peer, { sign: k.sign, committee })
      expect(await other.grantOwn!(T1, claimant(0), [STATE], [])).to.deep.equal([])
      expect((await other.table.records([STATE]))[0]).to.equal(undefined)
    }
  })

  it('a signer counts its fellow signers\' seats\' grants of the transaction (q of the seats), not those of a quorum that is no signer of the block, nor its own claim under another nonce', async () => {
    // four seats, q(4) = 3; each seat's node hosts one of the block's signers
    const four = await seatsOf(4)
    const grants = (await Promise.all(four.map(async (s, i) => await s.claims.grantOwn!(T1, claimant(i), [STATE], [])))).flat()
    expect(grants).to.have.length(4)
    const checker = four[4 - 1]!.claims
    // quorum e signs; a, b, c, d are its fellows (the block's other signers)
    const fellows = quorums.slice(0, 4)
    expect((await checker.checkGrants(T1, quorums[4]!, [STATE], [], grants, nonce(4), fellows)).granted).to.equal(true)
    // before grants in the votes, a signer took only grants naming its own claim: these name others
    expect((await checker.checkGrants(T1, quorums[4]!, [STATE], [], grants, nonce(4))).granted).to.equal(false)
    // two of the four claimants are no signers of this block: two grants left, three needed
    expect((await checker.checkGrants(T1, quorums[4]!, [STATE], [], grants, nonce(4), quorums.slice(0, 2))).granted).to.equal(false)
    // quorum a itself, under a nonce of an earlier vote, does not count its own old grant; its fellows' do
    const asA = await checker.checkGrants(T1, quorums[0]!, [STATE], [], grants, nonce(9), quorums.slice(1, 4))
    expect(asA.granted, 'three fellows\' seats still grant').to.equal(true)
    const asAFew = await checker.checkGrants(T1, quorums[0]!, [STATE], [], grants, nonce(9), quorums.slice(1, 3))
    expect(asAFew.granted, 'its own old grant plus two fellows\' is not enough').to.equal(false)
  })

  it('checks of the five votes\' claims made at once (the sender\'s) verify each grant\'s signature once, not once per check', async () => {
    const five = await seatsOf(5)
    const grants = (await Promise.all(five.map(async (s, i) => await s.claims.grantOwn!(T1, claimant(i), [STATE], [])))).flat()
    const checker = claimsAt((await peerKey()).peer, { committee: () => five.map((s) => s.peer) })
    // counted at node:crypto's verify: the checks run there for this test (libsodium's are not seen from here)
    const { result: all, verified } = await countingChecks(async () => await Promise.all(quorums.map(async (q, i) => await checker.checkGrants(T1, q, [STATE], [], grants, nonce(i), quorums))))
    expect(all.every((r) => r.granted)).to.equal(true)
    expect(verified, 'signatures verified').to.equal(5)
  })

  it('a signer shown the grants of all five claims by the same seats checks as many signatures as it needs (q), not all of them; what it counts is the same', async () => {
    // seven seats, q(7) = 5; each seat grants each of the five signers' claims: 35 grants
    const seven = await seatsOf(7)
    const grants = (await Promise.all(seven.map(async (s) => (await Promise.all(quorums.map(async (_, i) => await s.claims.grantOwn!(T1, claimant(i), [STATE], [])))).flat()))).flat()
    expect(grants).to.have.length(35)
    const checker = claimsAt((await peerKey()).peer, { committee: () => seven.map((s) => s.peer) })
    const { result, verified } = await countingChecks(async () => await checker.checkGrants(T1, quorums[2]!, [STATE], [], grants, nonce(2), quorums))
    expect(result.granted).to.equal(true)
    expect(result.tallies[0]).to.include({ arbiters: 7, needed: 5, grants: 5 })
    expect(verified, 'signatures checked').to.equal(5)
  })

  it('grants whose signatures fail are passed over and the next ones checked: enough good ones still grant; too few refuse, counting every good one', async () => {
    const seven = await seatsOf(7)
    const grants = (await Promise.all(seven.map(async (s) => await s.claims.grantOwn!(T1, claimant(0), [STATE], [])))).flat()
    const forged = (g: typeof grants[number]): typeof g => ({ ...g, sig: g.sig.slice(0, -2) + (g.sig.endsWith('00') ? '01' : '00') })
    const committee = { committee: () => seven.map((s) => s.peer) }
    // two forged first, five good after: q(7) = 5 good ones
    const twoBad = [forged(grants[0]!), forged(grants[1]!), ...grants.slice(2)]
    const a = await countingChecks(async () => await claimsAt((await peerKey()).peer, committee).checkGrants(T1, quorums[0]!, [STATE], [], twoBad, nonce(0)))
    expect(a.result.granted).to.equal(true)
    expect(a.verified).to.equal(7)
    // three forged: four good ones, five needed; all four counted in the answer
    const threeBad = [forged(grants[0]!), forged(grants[1]!), forged(grants[2]!), ...grants.slice(3)]
    const b = await countingChecks(async () => await claimsAt((await peerKey()).peer, committee).checkGrants(T1, quorums[0]!, [STATE], [], threeBad, nonce(0)))
    expect(b.result.granted).to.equal(false)
    expect(b.result.tallies[0]).to.include({ arbiters: 7, needed: 5, grants: 4 })
    // a forged copy shown beside the good grant of the same seat takes nothing from it
    const both = [forged(grants[0]!), ...grants]
    expect((await claimsAt((await peerKey()).peer, committee).checkGrants(T1, quorums[0]!, [STATE], [], both, nonce(0))).granted).to.equal(true)
  })

  it('a request stuffed with forged grants costs a few checks per arbiter: past two failures a peer\'s other grants are not checked', async () => {
    const seven = await seatsOf(7)
    const grants = (await Promise.all(seven.map(async (s) => await s.claims.grantOwn!(T1, claimant(0), [STATE], [])))).flat()
    const forged = (g: typeof grants[number], i: number): typeof g => ({ ...g, sig: (i % 256).toString(16).padStart(2, '0').repeat(64) })
    // 50 forgeries in the names of each of two seats, ahead of all seven real grants
    const stuffed = [...Array.from({ length: 50 }, (_, i) => forged(grants[0]!, i)), ...Array.from({ length: 50 }, (_, i) => forged(grants[1]!, i)), ...grants]
    const checker = claimsAt((await peerKey()).peer, { committee: () => seven.map((s) => s.peer) })
    const { result, verified } = await countingChecks(async () => await checker.checkGrants(T1, quorums[0]!, [STATE], [], stuffed, nonce(0)))
    // the two seats' real grants are passed over with their forgeries; the other five are q(7)
    expect(result.granted).to.equal(true)
    expect(verified, 'signatures checked').to.equal(2 + 2 + 5)
  })

  it('forgeries in an honest seat\'s name riding one fellow\'s claim do not keep that seat\'s real grant of another fellow\'s claim unchecked (review)', async () => {
    // seven seats, q(7) = 5: seats 0-3 grant the checking quorum's own claim, seat 4 only fellow b's
    const seven = await seatsOf(7)
    const own = (await Promise.all(seven.slice(0, 4).map(async (s) => await s.claims.grantOwn!(T1, claimant(0), [STATE], [])))).flat()
    const [real] = await seven[4]!.claims.grantOwn!(T1, claimant(1), [STATE], [])
    // a dishonest fellow (c) carries two made-up grants in seat 4's name, ahead of seat 4's real one
    const forged = [0, 1].map((i) => ({ ...real!, quorum: quorums[2]!, nonce: nonce(2), sig: String(i).repeat(128) }))
    const checker = claimsAt((await peerKey()).peer, { committee: () => seven.map((s) => s.peer) })
    const r = await checker.checkGrants(T1, quorums[0]!, [STATE], [], [...own, ...forged, real!], nonce(0), quorums.slice(1))
    expect(r.granted, 'seat 4 counted through fellow b\'s claim').to.equal(true)
  })
})
