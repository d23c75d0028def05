import { expect } from 'chai'
import { waitFor } from '../../../helpers/wait.js'
import { nonceOfSecret, type PeerSeal } from '../../../../src/consensus/claim-proofs.js'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { claimsAt, peerKey, seatsOf } from './committee-fixture.js'

/**
 * A signer's own seal (docs/protocol.md, "Seals"): a quorum whose node is an arbiter of the states
 * it signs for seals its own record as it signs, and the seal rides its SIGN answer; a sender whose
 * signers' seals reach q(n) decides without waiting for a round of seals.
 */
describe('claims: the seal a signer makes of its own record as it signs', () => {
  const T1 = sha3Hex('the first spend')
  const T2 = sha3Hex('a conflicting spend')
  const STATE = sha3Hex('a token state')
  const five = ['bafybmiqa', 'bafybmiqb', 'bafybmiqc', 'bafybmiqd', 'bafybmiqe']
  const nonce = (i: number): string => (0xb0 + i).toString(16).padStart(32, '0')
  const claimants = (): Array<{ peer: string, quorum: string, nonce: string, sig: string }> => five.map((quorum, i) => ({ peer: 'sender', quorum, nonce: nonce(i), sig: 'ab' }))

  it('seals the record that names the signer\'s own claim, for good, and signs it with the node\'s peer key; nothing else', async () => {
    const [seat] = await seatsOf(1)
    const { claims } = seat!
    await claims.table.claim(T1, [STATE], claimants())
    // a quorum that is no claimant of the record, or the claimant's other nonce, seals nothing
    expect(await claims.sealSigned!(T1, 'bafybmiqz', nonce(0), [{ stateHash: STATE, holder: T1 }])).to.deep.equal([])
    expect(await claims.sealSigned!(T1, five[0]!, nonce(9), [{ stateHash: STATE, holder: T1 }])).to.deep.equal([])
    // nor for another transaction, nor a state nobody claimed here (no record is made)
    expect(await claims.sealSigned!(T2, five[0]!, nonce(0), [{ stateHash: STATE, holder: T2 }])).to.deep.equal([])
    const other = sha3Hex('a state this node holds nothing of')
    expect(await claims.sealSigned!(T1, five[0]!, nonce(0), [{ stateHash: other, holder: T1 }])).to.deep.equal([])
    expect((await claims.table.records([other]))[0]).to.equal(undefined)
    expect((await claims.table.records([STATE]))[0]?.committed).to.equal(undefined)
    // the signer's own claim: sealed, permanent, and the seal counts at a receiver
    const sealed = await claims.sealSigned!(T1, five[2]!, nonce(2), [{ stateHash: STATE, holder: T1 }])
    expect(sealed).to.have.length(1)
    expect(sealed[0]).to.include({ peer: seat!.peer, holder: T1 })
    expect((await claims.table.records([STATE]))[0]).to.include({ txid: T1, committed: true })
    const again = await claims.table.claim(T2, [STATE], [{ peer: 'p', quorum: 'bafybmiqy', nonce: nonce(7), sig: 'ab' }])
    expect(again[0]).to.include({ granted: false, holder: T1 })
    const receiver = claimsAt((await peerKey()).peer, { committee: () => [seat!.peer] })
    expect((await receiver.checkSeals!([{ stateHash: STATE, holder: T1 }], sealed)).granted).to.equal(true)
  })

  it('a sender whose signers\' seals reach q(n) is answered without asking the other arbiters, whose seals come when asked for', async () => {
    // four seats, q(4) = 3: three signers' nodes sealed as they signed; the fourth seat does not
    // answer until released. Before, the sender asked every seat and waited for all of them.
    const four = await seatsOf(4)
    const items = [{ stateHash: STATE, holder: T1 }]
    for (const s of four) await s.claims.table.claim(T1, [STATE], claimants())
    const presealed: PeerSeal[] = (await Promise.all(four.slice(0, 3).map(async (s, i) => await s.claims.sealSigned!(T1, five[i]!, nonce(i), items)))).flat()
    expect(presealed).to.have.length(3)
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    const asked: string[] = []
    const byPeer = new Map(four.map((s) => [s.peer, s]))
    const rpc = {
      call: async (peer: string, method: string, req: never) => {
        asked.push(peer)
        if (method !== 'claims.seal') throw new Error('not served')
        if (peer === four[3]!.peer) await held
        return await byPeer.get(peer)!.claims.serveSeal!(req, 'sender-peer')
      }
    } as unknown as RpcClient<never>
    const sender = claimsAt((await peerKey()).peer, { rpc, committee: () => four.map((s) => s.peer) })
    // the five consents, so that the fourth seat seals too once it answers
    const consents = five.map((quorum, i) => ({ quorum, nonce: nonce(i), secret: 'unused' }))
    const r = await sender.sealFor!(T1, items, consents, [], presealed)
    expect(r.granted).to.equal(true)
    expect(r.seals.map((g) => g.peer).sort()).to.deep.equal(four.slice(0, 3).map((s) => s.peer).sort())
    expect(asked, 'nobody is asked before the certificate is to grow').to.deep.equal([])
    const growing = r.grow!()
    await waitFor(() => asked.length > 0, { timeoutMs: 5000, what: 'the other seat to be asked' })
    expect(asked, 'only the seat that had not sealed is asked').to.deep.equal([four[3]!.peer])
    release()
    const later = await growing
    expect(await r.grow!(), 'asked once').to.deep.equal(later)
    expect(asked).to.have.length(1)
    // the consents above open no nonce, so the fourth seat refuses; what it would add comes here
    expect(later).to.deep.equal([])
  })

  it('a signer\'s seal that does not verify, or of a peer that is no seat, counts for nothing: the seats are asked and waited for', async () => {
    const four = await seatsOf(4)
    const items = [{ stateHash: STATE, holder: T1 }]
    for (const s of four) await s.claims.table.claim(T1, [STATE], claimants())
    const good = await four[0]!.claims.sealSigned!(T1, five[0]!, nonce(0), items)
    const stranger = await peerKey()
    const strangers = await claimsAt(stranger.peer, { sign: stranger.sign, committee: () => [stranger.peer] })
    await strangers.table.claim(T1, [STATE], claimants())
    const notSeat = await strangers.sealSigned!(T1, five[1]!, nonce(1), items)
    const forged: PeerSeal[] = [{ ...good[0]!, peer: four[1]!.peer }, { ...good[0]!, peer: four[2]!.peer }]
    const asked: string[] = []
    const rpc = { call: async (peer: string, method: string, req: { items: unknown[] }) => { asked.push(peer); return { answers: req.items.map(() => ({ sealed: false, holder: '' })) } } } as unknown as RpcClient<never>
    const sender = claimsAt((await peerKey()).peer, { rpc, committee: () => four.map((s) => s.peer) })
    const r = await sender.sealFor!(T1, items, [], [], [...good, ...notSeat, ...forged])
    expect(r.granted).to.equal(false)
    expect(r.grow).to.equal(undefined)
    expect(asked.sort(), 'every seat but the one whose seal verified is asked').to.deep.equal(four.slice(1).map((s) => s.peer).sort())
  })

  describe('a sender whose signers\' seals fall short of q(n)', () => {
    // seven seats, q(7) = 5; two signers' nodes sealed as they signed; the five claims' consents
    // open their nonces, so every seat asked seals
    const secret = (i: number): string => (0xc0 + i).toString(16).padStart(32, '0')
    const items = [{ stateHash: STATE, holder: T1 }]
    const consents = five.map((quorum, i) => ({ quorum, nonce: nonceOfSecret(secret(i)), secret: secret(i) }))
    async function sevenSeats (serve: (peer: string, call: number) => Promise<void | { answers: Array<{ sealed: boolean, holder?: string }> }>, sealHedgeMs?: number): Promise<{ seven: Awaited<ReturnType<typeof seatsOf>>, asked: string[], sender: ReturnType<typeof claimsAt>, presealed: PeerSeal[] }> {
      const seven = await seatsOf(7)
      const who = five.map((quorum, i) => ({ peer: 'sender', quorum, nonce: nonceOfSecret(secret(i)), sig: 'ab' }))
      for (const s of seven) await s.claims.table.claim(T1, [STATE], who)
      const presealed = (await Promise.all(seven.slice(0, 2).map(async (s, i) => await s.claims.sealSigned!(T1, five[i]!, nonceOfSecret(secret(i)), items)))).flat()
      const asked: string[] = []
      const byPeer = new Map(seven.map((s) => [s.peer, s]))
      const rpc = {
        call: async (peer: string, method: string, req: never) => {
          asked.push(peer)
          if (method !== 'claims.seal') throw new Error('not served')
          const instead = await serve(peer, asked.length)
          if (instead !== undefined) return instead
          return await byPeer.get(peer)!.claims.serveSeal!(req, 'sender-peer')
        }
      } as unknown as RpcClient<never>
      return { seven, asked, presealed, sender: claimsAt((await peerKey()).peer, { rpc, committee: () => seven.map((s) => s.peer), ...(sealHedgeMs !== undefined ? { sealHedgeMs } : {}) }) }
    }

    it('asks only as many of the other arbiters as q(n) still needs; the rest when the certificate is to grow', async () => {
      const { seven, asked, sender, presealed } = await sevenSeats(async () => {})
      const r = await sender.sealFor!(T1, items, consents, seven.map((s) => s.peer), presealed)
      expect(r.granted).to.equal(true)
      // before: all five seats that had not sealed were asked and waited for
      expect(asked, 'three seats asked: two seals shown, five needed').to.have.length(3)
      expect(r.seals).to.have.length(5)
      const grown = await r.grow!()
      expect(asked, 'the other two asked once the certificate is to grow').to.have.length(5)
      expect(new Set(asked).size).to.equal(5)
      expect(grown).to.have.length(2)
    })

    it('asks the other arbiters at once when one of those asked fails', async () => {
      const { seven, asked, sender, presealed } = await sevenSeats(async (_peer, call) => { if (call === 1) throw new Error('unreachable') })
      const r = await sender.sealFor!(T1, items, consents, seven.map((s) => s.peer), presealed)
      expect(r.granted).to.equal(true)
      expect(new Set(asked).size, 'every seat that had not sealed asked').to.equal(5)
      expect(r.seals.length).to.be.at.least(5)
    })

    it('asks the other arbiters too when one of those asked has not answered in a short while, and does not wait for it', async function () {
      this.timeout(10_000)
      let release: () => void = () => {}
      const held = new Promise<void>((resolve) => { release = resolve })
      const { seven, asked, sender, presealed } = await sevenSeats(async (_peer, call) => { if (call === 1) await held })
      try {
        // before: every seat asked and waited for, the silent one until its request timed out
        const r = await sender.sealFor!(T1, items, consents, seven.map((s) => s.peer), presealed)
        expect(r.granted).to.equal(true)
        expect(new Set(asked).size).to.equal(5)
        expect(r.seals.length).to.be.at.least(5)
      } finally { release() }
    })

    it('asks the other arbiters at once when one of those asked refuses, without waiting for the others asked first', async function () {
      this.timeout(10_000)
      let release: () => void = () => {}
      const held = new Promise<void>((resolve) => { release = resolve })
      // the first seat asked holds no record (it refuses); the second is slow; no hedge
      const { seven, asked, sender, presealed } = await sevenSeats(async (_peer, call) => {
        if (call === 1) return { answers: [{ sealed: false, holder: '' }] }
        if (call === 2) await held
      }, 60_000)
      try {
        const sealing = sender.sealFor!(T1, items, consents, seven.map((s) => s.peer), presealed)
        // before: the rest were asked only once all three first answered (or after the hedge)
        // (the rest are asked as the refusal is taken, before any timer: the hedge is a timer of 300 ms)
        await waitFor(() => new Set(asked).size === 5, { timeoutMs: 200, what: 'the other seats to be asked after the refusal' })
        const r = await sealing
        expect(r.granted, 'two shown, and the third seat asked first and the two others').to.equal(true)
      } finally { release() }
    })

    it('grows the certificate with the seal of an arbiter that refused while it held no record, once the claim was made there', async function () {
      this.timeout(10_000)
      let release: () => void = () => {}
      const held = new Promise<void>((resolve) => { release = resolve })
      let refuser: string | undefined
      // the first seat asked refuses (no record yet); of the two asked then, the last is slow:
      // q(7) = 5 is reached with the two shown and three others, the slow one still out
      const { seven, asked, sender, presealed } = await sevenSeats(async (peer, call) => {
        if (call === 1) { refuser = peer; return { answers: [{ sealed: false, holder: '' }] } }
        if (call === 5) await held
      }, 60_000)
      const claimedAgain: string[][] = []
      const r = await sender.sealFor!(T1, items, consents, seven.map((s) => s.peer), presealed, async (others) => { claimedAgain.push([...others]) })
      expect(r.granted).to.equal(true)
      expect(r.seals).to.have.length(5)
      release()
      const grown = await r.grow!()
      expect(claimedAgain, 'the claim made at the other arbiters first').to.have.length(1)
      // before: the seat that refused was not asked again, its seal missing from the certificate
      expect(asked.filter((p) => p === refuser), 'the seat that refused asked again').to.have.length(2)
      expect(grown.map((g) => g.peer)).to.include(refuser)
      expect(grown, 'the slow seat\'s seal and the one that refused').to.have.length(2)
    })
  })
})
