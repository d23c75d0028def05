import { expect } from 'chai'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { ArbiterCommittee } from '../../../../src/node/consensus/arbiter-committee.js'
import type { WireRegistration } from '../../../../src/node/consensus/arbiter-wire.js'
import { peerSigner, verifyPeerSignature } from '../../../../src/p2p/peer-signature.js'
import { buildBundle } from '../../../../src/consensus/bundle.js'
import { didSignatureVerifier } from '../../../../src/tokens/verifier.js'
import { silentLogger } from '../../../../src/util/logger.js'
import { SimNet, type SimDid, type SimNode } from '../../consensus/harness.js'
import { memoryCollection } from '../../../helpers/memory-collection.js'

interface Seat { node: SimNode, did: SimDid, peer: string, sign: (d: Uint8Array) => Promise<Uint8Array>, tokens: string[] }

describe('node: the arbiter committee (registrations checked, counted, lapsed)', function () {
  this.timeout(60_000)
  let net: SimNet
  const seats: Seat[] = []
  const spent = new Set<string>()

  const committeeOf = (o: { selfPeer?: string, sign?: (d: Uint8Array) => Promise<Uint8Array> } = {}): ArbiterCommittee => {
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    const c = new ArbiterCommittee({
      col,
      host: () => ({ peerId: o.selfPeer ?? 'self', signAsPeer: o.sign ?? (async () => new Uint8Array(64)), addrs: () => [], learn: async () => {}, connected: () => [] }),
      rpc: () => undefined,
      verifier: didSignatureVerifier({ resolve: async (did) => net.docs.get(did) }),
      verifyPeer: verifyPeerSignature,
      // the stake's arbiters: a state in `spent` is held for a transaction by all of them
      probe: async (items) => items.some((it) => spent.has(it.stateHash)) ? { refused: 'held for transaction ff…' } : {},
      log: silentLogger,
      testNet: true,
      maturityMs: 0,
      graceMs: 0,
      recheckMs: 0,
      pullMs: 0
    })
    return c
  }

  before(async () => {
    net = new SimNet()
    for (let i = 0; i < 5; i++) {
      const node = net.addNode(`q${i}`)
      const did = await net.addDid(node)
      const tokens = await net.mint(node, did.did, 2)
      const key = await generateKeyPair('Ed25519')
      seats.push({ node, did, peer: peerIdFromPrivateKey(key).toString(), sign: peerSigner(key), tokens })
    }
  })

  /** Seat `s` registered on its own node's committee: the registration as offered to the others. */
  const registered = async (s: Seat): Promise<WireRegistration> => {
    const own = committeeOf({ selfPeer: s.peer, sign: s.sign })
    const ledger = s.node.ledger
    const t = (await ledger.tokensById([s.tokens[0]!]))[0]!
    const reg = await own.register(s.did.quorum, [{ token: t.tokenId, block: t.latestBlockId }], await buildBundle(ledger, [t.tokenId], { levels: 0 }))
    return own.list().find((w) => w.reg.at === reg.at && w.reg.did === reg.did)!
  }

  it('four verified seats put the committee in force; three do not; each seat is its DID\'s peer', async () => {
    const c = committeeOf()
    const wires = await Promise.all(seats.slice(0, 4).map(registered))
    for (const w of wires.slice(0, 3)) expect(await c.receive(w, 'p')).to.equal(undefined)
    expect(c.seats()).to.equal(undefined)
    expect(await c.receive(wires[3]!, 'p')).to.equal(undefined)
    expect(c.seats()).to.have.members(seats.slice(0, 4).map((s) => s.peer))
    expect(c.view().every((v) => v.state === 'seated')).to.equal(true)
  })

  it('a registration naming a peer it does not hold the key of, a stake of another DID, a changed field or a spent stake is refused', async () => {
    const c = committeeOf()
    const w = await registered(seats[4]!)
    // another peer claimed: the peer's signature no longer verifies
    expect(await c.receive({ ...w, reg: { ...w.reg, peer: seats[0]!.peer } }, 'p')).to.match(/peer's signature/)
    // a later time written in: neither signature covers it
    expect(await c.receive({ ...w, reg: { ...w.reg, at: w.reg.at + 1 } }, 'p')).to.match(/signature/)
    // the chain of another DID's token shown for it
    const other = seats[0]!
    const theirs = (await other.node.ledger.tokensById([other.tokens[1]!]))[0]!
    const bundle = await buildBundle(other.node.ledger, [theirs.tokenId], { levels: 0 })
    const forged = { ...w, chains: { [w.reg.stake[0]!.token]: bundle.chains[theirs.tokenId]!.map((b) => Buffer.from(b).toString('hex')) } }
    expect(await c.receive(forged, 'p')).to.not.equal(undefined)
    // the stake spent at its arbiters
    const { stakeProbeStates } = await import('../../../../src/node/consensus/arbiter-wire.js')
    spent.add(stakeProbeStates(w)[0]!)
    expect(await c.receive(w, 'p')).to.match(/stake is spent/)
    spent.clear()
    // a refusal is answered from memory for a while (it is not checked again on every offer): a node that did not refuse it takes it
    expect(await c.receive(w, 'p')).to.match(/stake is spent/)
    expect(await committeeOf().receive(w, 'p')).to.equal(undefined)
  })

  it('a seat whose stake is spent afterwards lapses at the next probe; a leave ends a seat', async () => {
    const c = committeeOf()
    const wires = await Promise.all(seats.map(registered))
    for (const w of wires) await c.receive(w, 'p')
    expect(c.seats()).to.have.length(5)
    const { stakeProbeStates } = await import('../../../../src/node/consensus/arbiter-wire.js')
    spent.add(stakeProbeStates(wires[1]!)[0]!)
    await c.recheck()
    spent.clear()
    expect(c.seats()).to.not.include(seats[1]!.peer)
    expect(c.view().find((v) => v.did === seats[1]!.did.did)?.state).to.equal('lapsed')
    // seat 2 leaves, from its own node: 3 seats are left
    const own = committeeOf({ selfPeer: seats[2]!.peer, sign: seats[2]!.sign })
    await own.receive(wires[2]!, 'p')
    await new Promise((resolve) => setTimeout(resolve, 2))
    await own.register(seats[2]!.did.quorum, [], { chains: {}, contents: {} }, true)
    const leave = own.list().find((x) => x.reg.leave === true)!
    expect(await c.receive(leave, 'p')).to.equal(undefined)
    // once in force the committee stays in force, its remaining seats counted (never the peers again)
    expect(c.seats()).to.have.members([0, 3, 4].map((i) => seats[i]!.peer))
  })

  it('the tokens of this node\'s own standing seat are the ones it keeps out of spending', async () => {
    const s = seats[3]!
    const own = committeeOf({ selfPeer: s.peer, sign: s.sign })
    const t = (await s.node.ledger.tokensById([s.tokens[0]!]))[0]!
    await own.register(s.did.quorum, [{ token: t.tokenId, block: t.latestBlockId }], await buildBundle(s.node.ledger, [t.tokenId], { levels: 0 }))
    expect([...own.stakedBy(s.peer)]).to.deep.equal([t.tokenId])
    expect([...own.stakedBy('another peer')]).to.deep.equal([])
  })
})
