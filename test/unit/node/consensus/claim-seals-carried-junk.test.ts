import { expect } from 'chai'
import { bytesToHex, sha3Hex } from '../../../../src/tokenchain/hash.js'
import { peerSealBytes, type PeerSeal } from '../../../../src/consensus/claim-proofs.js'
import { CERT_SEALS_MAX, certificatesToKeep } from '../../../../src/consensus/carried-certificates.js'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { isPeerSeal } from '../../../../src/consensus/quorum-claims.js'
import { peerKey, claimsAt, seatsOf, sealedAt, SIGNER_QUORUMS, wireBytes, MiB } from './committee-fixture.js'

/**
 * Padding a certificate with the owner's own seats' extra seals. Seven seats (f = 2, q(7) = 5):
 * 0, 1, 2 honest, 3 and 4 the owner's, 5 and 6 honest and never asked. T1 pays bob two states, S1
 * and S2, each certified by seats 0..4. The owner hands bob T1's certificate with, ahead of it, more
 * seals of his seats 3 and 4 for T1 over S1 and made-up states (each a genuine signature: a seat
 * signs what it likes). Bob's check counts them all, and he keeps them as T1's certificate.
 *
 * Later bob pays dave. The owner's seats now sign S2 sealed to another transaction (a contest), and
 * dave's check of the earlier block T1 needs q(n) seals of S2 to T1: the three honest ones, and the
 * owner's seats' own, which the padding pushed out (past the per-signer cap at dave, or past
 * CERT_SEALS_MAX in bob's record). Three < 5, two seats with no record < 5: "unanswered", every
 * time bob tries, as long as f seats keep contesting. Bob's accepted token is frozen by f liars
 * (for good once the owner also sealed S2 to another transaction at the two seats never asked).
 * And the padding may be as long as a delivery takes: bob keeps it and carries it on.
 */

type Seat = Awaited<ReturnType<typeof seatsOf>>[number]

/** A seal signed by `seat` of `states` to `holder` (genuine: the seat's own key). */
const signed = async (seat: Seat, holder: string, states: string[]): Promise<PeerSeal> => {
  const g = { peer: seat.peer, holder, states }
  return { ...g, sig: bytesToHex(await seat.sign(peerSealBytes(g))) }
}

/**
 * The seats' `claims.seal` as dave reaches them: the owner's seats (`liars`) answer that `contested`
 * is sealed to `other`, with a signed seal, and that they hold nothing else; the rest answer themselves.
 */
const contestingRpc = (seats: readonly Seat[], liars: readonly Seat[], contested: string, other: string): RpcClient<never> => ({
  call: async (peer: string, method: string, req: { items: Array<{ stateHash: string, holder: string }> }) => {
    if (method !== 'claims.seal') throw new Error(`${method} not served`)
    const liar = liars.find((s) => s.peer === peer)
    if (liar === undefined) return await seats.find((s) => s.peer === peer)!.claims.serveSeal!(req as never, 'dave-peer')
    const idx = req.items.flatMap((it, j) => it.stateHash === contested ? [j] : [])
    const seal = await signed(liar, other, [contested])
    return {
      answers: req.items.map((it) => it.stateHash === contested ? { sealed: false, holder: other, committed: true, why: 'sealed to another transaction' } : { sealed: false, why: 'nothing held' }),
      seals: idx.length > 0 ? [{ holder: other, items: idx, sig: seal.sig }] : []
    }
  }
}) as unknown as RpcClient<never>

/** T1 paying bob two states, certified by seats 0..4 (3 and 4 the owner's); 5 and 6 never asked. */
async function twoStatesPaidToBob (label: string): Promise<{ seats: Seat[], s1: string, s2: string, t1: string, committee: () => string[], certificate: PeerSeal[], items: Array<{ stateHash: string, holder: string }>, liars: Seat[] }> {
  const seats = await seatsOf(7)
  const s1 = sha3Hex(`the owner's first state: ${label}`)
  const s2 = sha3Hex(`the owner's second state: ${label}`)
  const t1 = sha3Hex(`the spend bob accepted: ${label}`)
  const certificate = [...await sealedAt(seats, [0, 1, 2, 3, 4], s1, t1, SIGNER_QUORUMS), ...await sealedAt(seats, [0, 1, 2, 3, 4], s2, t1, SIGNER_QUORUMS)]
  const committee = (): string[] => seats.map((s) => s.peer)
  // the two states of T1 as a later receiver asks about them, and the owner's two seats
  return { seats, s1, s2, t1, committee, certificate, items: [{ stateHash: s1, holder: t1 }, { stateHash: s2, holder: t1 }], liars: [seats[3]!, seats[4]!] }
}

/** Bob's record of the certificates he keeps, as his receiver writes it. */
const recordOf = (): { recordsByKey: <T>(c: string, keys: string[]) => Promise<Array<T | undefined>>, put: (kv: Array<[string, PeerSeal[]]>) => void } => {
  const m = new Map<string, PeerSeal[]>()
  return {
    recordsByKey: async <T>(_c: string, keys: string[]) => keys.map((k) => m.get(k) as T | undefined),
    put: (kv) => { for (const [k, v] of kv) m.set(k, v) }
  }
}

/** Bob's receiver checks T1's certificate as delivered and keeps what it counted, as it writes it: what he keeps of `holder`. */
async function bobKeeps (committee: () => string[], items: Array<{ stateHash: string, holder: string }>, delivered: PeerSeal[], holder: string): Promise<{ checked: Awaited<ReturnType<NonNullable<ReturnType<typeof claimsAt>['checkSeals']>>>, kept: PeerSeal[] }> {
  const bob = claimsAt((await peerKey()).peer, { committee })
  const checked = await bob.checkSeals!(items, delivered)
  const record = recordOf()
  record.put(await certificatesToKeep(record as never, checked.seals ?? []))
  return { checked, kept: (await record.recordsByKey<PeerSeal[]>('cs-certs', [holder]))[0] ?? [] }
}

describe('claims: an accepted payment\'s carried certificate padded with the owner\'s seats\' seals', () => {
  it('HOLE a few extra seals of each owner seat ahead of its real ones push them past the per-signer cap, and f contests freeze the token', async function () {
    this.timeout(20_000)
    const { seats, s1, s2, t1, committee, certificate, items, liars } = await twoStatesPaidToBob('per-signer cap')
    // three genuine seals of each owner seat to T1, over S1 and a made-up state, ahead of the certificate
    const padding: PeerSeal[] = []
    for (const l of liars) for (let k = 0; k < 3; k++) padding.push(await signed(l, t1, [s1, sha3Hex(`padding ${l.peer} ${k}`)]))
    // bob's receiver checks T1's certificate as delivered, and keeps what it counted
    const { checked, kept } = await bobKeeps(committee, items, [...padding, ...certificate], t1)
    expect(checked.granted, 'T1 is certified: bob accepts it').to.equal(true)
    expect(kept.length, 'bob keeps one seal per state and seat at most, not the padding').to.be.at.most(items.length * 5)
    // bob pays dave: the delivery carries what bob kept; the owner's seats contest S2
    const T2 = sha3Hex('the spend the owner seats now claim S2 was sealed to')
    const dave = claimsAt((await peerKey()).peer, { committee, rpc: contestingRpc(seats, liars, s2, T2) })
    const r = await dave.priorSeals!(items, { carried: kept })
    expect(r.refused, 'T1 was certified').to.equal(undefined)
    expect(r.unanswered, 'bob\'s accepted token is frozen by f contesting seats').to.equal(undefined)
    // a later sender of the owner's carrying the padding ahead of the certificate: the same
    const padded = await dave.priorSeals!(items, { carried: [...padding, ...certificate] })
    expect(padded.refused ?? padded.unanswered).to.equal(undefined)
  })

  it('HOLE the owner seats\' extra seals fill bob\'s record of the certificate (CERT_SEALS_MAX) before the honest seals, and f contests freeze the token', async function () {
    this.timeout(30_000)
    const { seats, s1, s2, t1, committee, certificate, items, liars } = await twoStatesPaidToBob('record filled')
    const padding: PeerSeal[] = []
    for (let k = 0; k < CERT_SEALS_MAX; k++) padding.push(await signed(liars[k % 2]!, t1, [s1, sha3Hex(`padding ${k}`)]))
    const { checked, kept } = await bobKeeps(committee, items, [...padding, ...certificate], t1)
    expect(checked.granted, 'T1 is certified: bob accepts it').to.equal(true)
    const T2 = sha3Hex('the spend the owner seats now claim S2 was sealed to (record)')
    const dave = claimsAt((await peerKey()).peer, { committee, rpc: contestingRpc(seats, liars, s2, T2) })
    const r = await dave.priorSeals!(items, { carried: kept })
    expect(r.unanswered, 'bob\'s accepted token is frozen by f contesting seats').to.equal(undefined)
    // what bob keeps must still certify S2 to T1: q(7) = 5 seats
    const s2By = new Set(kept.filter((g) => g.states.includes(s2)).map((g) => g.peer))
    expect(s2By.size, 'bob\'s record of T1 still holds a certificate of S2').to.be.at.least(5)
  })

  it('HOLE with the record filled and S2 sealed to T2 at the two seats never asked, bob\'s accepted T1 is refused for good', async function () {
    this.timeout(30_000)
    const { seats, s1, s2, t1, committee, certificate, items, liars } = await twoStatesPaidToBob('refused for good')
    const padding: PeerSeal[] = []
    for (let k = 0; k < CERT_SEALS_MAX; k++) padding.push(await signed(liars[k % 2]!, t1, [s1, sha3Hex(`padding for good ${k}`)]))
    const { checked, kept } = await bobKeeps(committee, items, [...padding, ...certificate], t1)
    expect(checked.granted, 'T1 is certified: bob accepts it').to.equal(true)
    // the owner's quorums claim and seal S2 for T2 at honest seats 5 and 6, which then honestly
    // sign it sealed to T2; his seats 3 and 4 sign the same: four signed contests, f + 1 needed
    const T2 = sha3Hex('the owner second spend of S2 at the never-asked seats')
    expect(await sealedAt(seats, [5, 6], s2, T2), 'seats 5 and 6 sealed S2 to T2').to.have.length(2)
    const dave = claimsAt((await peerKey()).peer, { committee, rpc: contestingRpc(seats, liars, s2, T2) })
    const r = await dave.priorSeals!(items, { carried: kept })
    expect(r.refused, 'bob\'s accepted T1 refused for good').to.equal(undefined)
    expect(r.unanswered).to.equal(undefined)
  })

  it('HOLE an owner seat\'s seals over made-up states, as many and as long as a delivery takes, are kept as T1\'s certificate and carried with every later delivery of the token', async function () {
    this.timeout(120_000)
    const { seats, s1, s2, t1, committee, certificate, items } = await twoStatesPaidToBob('bloated')
    // CERT_SEALS_MAX genuine signatures of owner seat 4 to T1, each over S1 and 4 095 made-up
    // states (the most a seal on the wire may name): some 17 MB, which the delivery to bob fits
    const junk = Array.from({ length: 4095 }, (_, k) => sha3Hex(`made-up state ${k}`))
    const padding: PeerSeal[] = []
    for (let k = 0; k < CERT_SEALS_MAX; k++) padding.push(await signed(seats[4]!, t1, [s1, sha3Hex(`padding ${k}`), ...junk.slice(1)]))
    const delivered = [...padding, ...certificate].filter(isPeerSeal)
    expect(delivered.length, 'every padding seal is well formed').to.equal(padding.length + certificate.length)
    const { checked, kept } = await bobKeeps(committee, items, delivered, t1)
    expect(checked.granted).to.equal(true)
    // dave, paid next, counts the carried seals and keeps them in turn (three of each seat per
    // transaction, some 0.8 MB per owner seat) for his own deliveries
    const dave = claimsAt((await peerKey()).peer, { committee, rpc: contestingRpc(seats, [], s2, t1) })
    const r = await dave.priorSeals!(items, { carried: kept })
    expect(r.unanswered).to.equal(undefined)
    // a certificate of two states by seven seats is a few kilobytes: what is kept and carried on
    // must not grow with what the owner's seat chose to sign (four such payments in one of bob's
    // deliveries pass the 64 MiB frame: that delivery can never be made)
    expect(wireBytes(kept), 'bob keeps (and carries with each later delivery) the owner seat\'s padding').to.be.below(MiB)
  })

  it('(control) the certificate alone, carried, lets T1 stand against the same contests', async function () {
    this.timeout(20_000)
    const { seats, s2, committee, certificate, items } = await twoStatesPaidToBob('control')
    const T2 = sha3Hex('the spend the owner seats claim (control)')
    const dave = claimsAt((await peerKey()).peer, { committee, rpc: contestingRpc(seats, [seats[3]!, seats[4]!], s2, T2) })
    const r = await dave.priorSeals!(items, { carried: certificate })
    expect(r.refused).to.equal(undefined)
    expect(r.unanswered).to.equal(undefined)
  })
})
