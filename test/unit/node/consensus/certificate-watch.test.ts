import { expect } from 'chai'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'
import { ClaimTable } from '../../../../src/consensus/claims.js'
import { peerGrantBytes, peerSealBytes, type PeerGrant, type PeerSeal } from '../../../../src/consensus/claim-proofs.js'
import type { CertificateEvidence } from '../../../../src/consensus/certificate-evidence.js'
import { DoubleSpends } from '../../../../src/consensus/double-spends.js'
import type { ConsensusEvent } from '../../../../src/consensus/observe.js'
import type { ConsensusSigner } from '../../../../src/consensus/ports.js'
import { nodeCertificateEvidence } from '../../../../src/node/consensus/certificate-watch.js'
import type { ArbiterView } from '../../../../src/node/consensus/arbiter-view.js'
import type { NodeSpentMarkers } from '../../../../src/node/consensus/spent-markers.js'
import { nodeStateClaims, type NodeStateClaims } from '../../../../src/node/consensus/state-claims.js'
import type { P2pHost } from '../../../../src/p2p/host.js'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { tokenStateHash } from '../../../../src/tokenchain/token-id.js'
import type { SignatureVerifier } from '../../../../src/tokenchain/validate.js'
import { silentLogger } from '../../../../src/util/logger.js'
import { MemoryLedger, memoryClaimStore } from '../../consensus/harness.js'

const sign = (did: string, msg: string): string => sha3Hex(`${did}|${msg}`)
const verifier: SignatureVerifier = { verify: async (did, msg, sig) => sig === sign(did, msg) }
const signer = (did: string): ConsensusSigner => ({ did, pvtSign: async (m) => sign(did, m), signHash: async (h) => ({ keySig: sign(did, h), shareSig: '', signType: 0 }) })

const STATE = tokenStateHash('a'.repeat(64), '0-' + 'b'.repeat(64))
const T1 = '1'.repeat(64)
const T2 = '2'.repeat(64)
const Q = 'bafybmiq1'
const nonce = (i: number): string => i.toString(16).padStart(32, '0')


describe('certificate evidence at the node: conflicting certificates through the signers\' grants (checkGrants) and the receivers\' seals (checkSeals)', () => {
  // three arbiters every node below has in its view; with the node itself, four arbiters: q = 3
  const arbiterKeys = Promise.all([1, 2, 3].map(async () => await generateKeyPair('Ed25519')))
  const idOf = (k: PrivateKey): string => peerIdFromPrivateKey(k).toString()

  async function node (ledger: MemoryLedger, events: ConsensusEvent[] = []): Promise<{ claims: NodeStateClaims, evidence: CertificateEvidence }> {
    const key = await generateKeyPair('Ed25519')
    const host = { peerId: idOf(key), signAsPeer: async (d: Uint8Array) => await key.sign(d), closestKnownPeers: () => [] } as unknown as P2pHost
    const markers = { knownMany: async (hs: readonly string[]) => hs.map(() => undefined), lookup: async () => undefined } as unknown as NodeSpentMarkers
    const known = (await arbiterKeys).map((k) => ({ peerId: idOf(k), multiaddrs: [] }))
    const evidence = await nodeCertificateEvidence({ ledger, log: silentLogger, observe: (e) => { events.push(e) } })
    const claims = nodeStateClaims({
      host: () => host, rpc: () => undefined, table: new ClaimTable(memoryClaimStore(), { now: () => Date.now() }), view: { closest: () => known } as unknown as ArbiterView,
      markers, verifier, quorumSigner: (d) => signer(d), outcome: async () => 'pending', log: silentLogger, certificates: evidence
    })
    return { claims, evidence }
  }

  /** Grants of STATE for Q's claim `n` of `txid`, signed by `keys` (default: the three arbiters); `signWith`: the key that really signs (a forgery when not the peer's). */
  async function grants (txid: string, n: string, keys?: PrivateKey[], signWith?: PrivateKey): Promise<PeerGrant[]> {
    return await Promise.all((keys ?? await arbiterKeys).map(async (key) => {
      const g = { peer: idOf(key), txid, quorum: Q, nonce: n, forTx: txid, states: [STATE] }
      return { ...g, sig: Buffer.from(await (signWith ?? key).sign(peerGrantBytes(g))).toString('hex') }
    }))
  }
  /** Seals of STATE to `holder`, signed by `keys` (default: the three arbiters), or forged with `signWith`. */
  async function seals (holder: string, keys?: PrivateKey[], signWith?: PrivateKey): Promise<PeerSeal[]> {
    return await Promise.all((keys ?? await arbiterKeys).map(async (key) => {
      const g = { peer: idOf(key), holder, states: [STATE] }
      return { ...g, sig: Buffer.from(await (signWith ?? key).sign(peerSealBytes(g))).toString('hex') }
    }))
  }
  const item = (holder: string): Array<{ stateHash: string, holder: string }> => [{ stateHash: STATE, holder }]

  const list = async (ledger: MemoryLedger): ReturnType<DoubleSpends['list']> => await new DoubleSpends({ ledger, log: silentLogger, clock: { now: () => 0 } }).list()

  it('the owner claims, releases and claims again through honest arbiters: a signer shown the two certificates of grants keeps and reports them, and distrusts nobody (a release explains them)', async () => {
    const ledger = new MemoryLedger()
    const events: ConsensusEvent[] = []
    const { claims, evidence } = await node(ledger, events)
    const arbiters = (await arbiterKeys).map(idOf).sort()
    expect((await claims.checkGrants(T1, Q, [STATE], [], await grants(T1, nonce(1)), nonce(1))).granted).to.equal(true)
    // the claim of T1 released by its quorum, the arbiters granted T2
    expect((await claims.checkGrants(T2, Q, [STATE], [], await grants(T2, nonce(2)), nonce(2))).granted).to.equal(true)
    await evidence.settled()
    const kept = await list(ledger)
    expect(kept).to.have.length(1)
    expect(kept[0]!).to.deep.include({ kind: 'certificates', seenBy: 'quorum', grantedTwice: arbiters, distrusted: [] })
    expect(kept[0]!.spenders).to.deep.equal([T1, T2])
    expect(events).to.deep.equal([{ kind: 'double-spend', seenBy: 'quorum', evidence: 'certificates' }])
    // the honest arbiters still count
    expect((await claims.checkGrants(T1, Q, [STATE], [], await grants(T1, nonce(1)), nonce(1))).granted).to.equal(true)
  })

  it('an arbiter that sealed one state to two transactions no longer counts, for a receiver\'s seals or a signer\'s grants, also after a restart', async () => {
    const ledger = new MemoryLedger()
    const events: ConsensusEvent[] = []
    const { claims, evidence } = await node(ledger, events)
    const keys = await arbiterKeys
    const t1 = await seals(T1)
    expect((await claims.checkSeals!(item(T1), t1)).granted).to.equal(true)
    // one arbiter sealed the state to T2 as well (a delivery shows it: short, but counted)
    expect((await claims.checkSeals!(item(T2), await seals(T2, [keys[0]!]))).granted).to.equal(false)
    await evidence.settled()
    expect(evidence.distrusted(idOf(keys[0]!))).to.equal(true)
    expect(evidence.distrusted(idOf(keys[1]!))).to.equal(false)
    expect(events).to.deep.include({ kind: 'arbiter-distrusted' })
    const kept = await list(ledger)
    expect(kept[0]!).to.deep.include({ seenBy: 'receiver', grantedTwice: [idOf(keys[0]!)], distrusted: [idOf(keys[0]!)] })
    expect(kept[0]!.certificates![0].grants.find((g) => g.peer === idOf(keys[0]!))).to.deep.include({ seal: true, final: true })
    // T1's seals now hold two that count of four arbiters, three needed; and a signer's grants the same
    const r = await claims.checkSeals!(item(T1), t1)
    expect(r.granted, 'a distrusted arbiter\'s seal counted').to.equal(false)
    expect(r.tallies[0]?.grants).to.equal(2)
    expect((await claims.checkGrants(T1, Q, [STATE], [], await grants(T1, nonce(1)), nonce(1))).granted).to.equal(false)
    // the node restarts: the distrust is read back from its ledger
    const again = await node(ledger)
    expect((await again.claims.checkSeals!(item(T1), t1)).granted).to.equal(false)
    expect((await again.claims.checkGrants(T1, Q, [STATE], [], await grants(T1, nonce(1)), nonce(1))).granted).to.equal(false)
  })

  it('a seal of T1 and a grant of T2 by one arbiter are reported and distrust nobody (the grant may have come before the claim of T1)', async () => {
    const ledger = new MemoryLedger()
    const { claims, evidence } = await node(ledger)
    expect((await claims.checkGrants(T2, Q, [STATE], [], await grants(T2, nonce(2)), nonce(2))).granted).to.equal(true)
    expect((await claims.checkSeals!(item(T1), await seals(T1))).granted).to.equal(true)
    await evidence.settled()
    const kept = await list(ledger)
    expect(kept).to.have.length(1)
    expect(kept[0]!.distrusted).to.deep.equal([])
    expect((await arbiterKeys).some((k) => evidence.distrusted(idOf(k)))).to.equal(false)
  })

  it('seals forged in the names of the real arbiters, or signed by peer keys this node never saw, distrust nobody and are kept nowhere', async () => {
    const ledger = new MemoryLedger()
    const { claims, evidence } = await node(ledger)
    const keys = await arbiterKeys
    const t1 = await seals(T1)
    expect((await claims.checkSeals!(item(T1), t1)).granted).to.equal(true)
    // an attacker's key signs "seals" of T2 naming each real arbiter
    const attacker = await generateKeyPair('Ed25519')
    expect((await claims.checkSeals!(item(T2), await seals(T2, keys, attacker))).granted).to.equal(false)
    // and keys made offline seal the state to both transactions
    const offline = await Promise.all([1, 2, 3].map(async () => await generateKeyPair('Ed25519')))
    await claims.checkSeals!(item(T1), await seals(T1, offline))
    await claims.checkSeals!(item(T2), await seals(T2, offline))
    await evidence.settled()
    expect([...keys, ...offline].some((k) => evidence.distrusted(idOf(k)))).to.equal(false)
    expect(await list(ledger)).to.deep.equal([])
    expect((await claims.checkSeals!(item(T1), t1)).granted).to.equal(true)
  })
})
