import { expect } from 'chai'
import { CERT_CONFLICTS_MAX, CertificateEvidence, DISTRUSTED, conflictId, doubleGrantersOf, type DistrustRecord, type GrantCheck, type KeptGrant } from '../../../src/consensus/certificate-evidence.js'
import type { PeerGrant } from '../../../src/consensus/claim-proofs.js'
import { DOUBLE_SPENDS, DoubleSpends, type DoubleSpendProof } from '../../../src/consensus/double-spends.js'
import type { ConsensusEvent } from '../../../src/consensus/observe.js'
import type { Logger } from '../../../src/util/logger.js'
import { silentLogger } from '../../../src/util/logger.js'
import { MemoryLedger } from './harness.js'

const S = 'a'.repeat(64)
const T1 = '1'.repeat(64)
const T2 = '2'.repeat(64)

/** A grant of `states` for `txid` by `peer`; its "signature" says what the test's check makes of it: good, final (sealed) or forged. */
const grant = (peer: string, txid: string, sig: 'good' | 'final' | 'forged' = 'good', states = [S]): PeerGrant =>
  ({ peer, sig, txid, quorum: 'bafyq', nonce: '0'.repeat(32), forTx: txid, states })
const check = async (g: KeptGrant): Promise<GrantCheck> => g.sig === 'good' ? 'valid' : g.sig === 'final' ? 'final' : undefined

function watch (ledger = new MemoryLedger()): { e: CertificateEvidence, ledger: MemoryLedger, events: ConsensusEvent[], warns: string[] } {
  const events: ConsensusEvent[] = []
  const warns: string[] = []
  const log = { ...silentLogger, warn: (m: string) => { warns.push(m) } } as unknown as Logger
  const e = new CertificateEvidence({ ledger, check, log, clock: { now: () => 1000 }, observe: (x) => { events.push(x) } })
  return { e, ledger, events, warns }
}

const cert = (txid: string, peers: string[], sig: 'good' | 'final' | 'forged' = 'good'): { stateHash: string, txid: string, grants: PeerGrant[] } =>
  ({ stateHash: S, txid, grants: peers.map((p) => grant(p, txid, sig)) })

describe('certificate evidence: conflicting certificates kept, reported, and double granters distrusted', () => {
  it('names the arbiters that granted both sides, and as proven only those whose two grants are final', () => {
    const a = new Map<string, KeptGrant>([['p1', { ...grant('p1', T1), final: true }], ['p2', grant('p2', T1)], ['p3', { ...grant('p3', T1), final: true }]])
    const b = new Map<string, KeptGrant>([['p1', { ...grant('p1', T2), final: true }], ['p2', { ...grant('p2', T2), final: true }], ['p4', grant('p4', T2)]])
    expect(doubleGrantersOf(a, b)).to.deep.equal({ grantedTwice: ['p1', 'p2'], proven: ['p1'] })
  })

  it('two certificates of one state for two transactions: both kept once (replays write nothing), counted and logged; grants that a release may explain distrust nobody', async () => {
    const { e, ledger, events, warns } = watch()
    e.observe('receiver', [cert(T1, ['p1', 'p2', 'p3'])])
    e.observe('receiver', [cert(T2, ['p1', 'p2', 'p4'])])
    await e.settled()
    const kept = await new DoubleSpends({ ledger, log: silentLogger, clock: { now: () => 0 } }).list()
    expect(kept).to.have.length(1)
    const p = kept[0]!
    expect(p.kind).to.equal('certificates')
    expect(p.id).to.equal(conflictId(S, T1, T2))
    expect(p.spenders).to.deep.equal([T1, T2])
    expect(p.grantedTwice).to.deep.equal(['p1', 'p2'])
    expect(p.distrusted).to.deep.equal([])
    expect(p.certificates!.map((c) => c.arbiters)).to.deep.equal([['p1', 'p2', 'p3'], ['p1', 'p2', 'p4']])
    expect(p.certificates![0].grants.map((g) => g.peer).sort()).to.deep.equal(['p1', 'p2', 'p3'])
    expect(events).to.deep.equal([{ kind: 'double-spend', seenBy: 'receiver', evidence: 'certificates' }])
    expect(warns.some((w) => w.includes('conflicting certificates') && w.includes(p.id))).to.equal(true)
    expect(['p1', 'p2', 'p3', 'p4'].some((x) => e.distrusted(x))).to.equal(false)
    // the same pair again, from another role: nothing more written or counted
    const writes = ledger.recs.get(DOUBLE_SPENDS)!.size
    e.observe('quorum', [cert(T2, ['p1', 'p2', 'p4'])])
    e.observe('quorum', [cert(T2, ['p1', 'p2', 'p4'])])
    await e.settled()
    expect(ledger.recs.get(DOUBLE_SPENDS)!.size).to.equal(writes)
    expect(events).to.have.length(1)
    // a grant of an arbiter not seen before on that side merges into the same record
    e.observe('quorum', [cert(T2, ['p5'])])
    await e.settled()
    const again = (await new DoubleSpends({ ledger, log: silentLogger, clock: { now: () => 0 } }).list())
    expect(again).to.have.length(1)
    expect(again[0]!.certificates![1].arbiters).to.deep.equal(['p1', 'p2', 'p4', 'p5'])
  })

  it('an arbiter whose two grants are final is distrusted in the same commit as the evidence, for good (a restart reads it back), and its grants are no longer taken', async () => {
    const { e, ledger, events, warns } = watch()
    e.observe('quorum', [{ stateHash: S, txid: T1, grants: [grant('p1', T1, 'final'), grant('p2', T1, 'final'), grant('p3', T1)] }])
    e.observe('receiver', [{ stateHash: S, txid: T2, grants: [grant('p1', T2, 'final'), grant('p2', T2), grant('p3', T2, 'final')] }])
    await e.settled()
    expect(e.distrusted('p1')).to.equal(true)
    expect(e.distrusted('p2')).to.equal(false)
    expect(e.distrusted('p3')).to.equal(false)
    const rec = ledger.recs.get(DISTRUSTED)!.get('p1') as DistrustRecord
    expect(rec.txids).to.deep.equal([T1, T2])
    expect(rec.grants.map((g) => [g.txid, g.final])).to.deep.equal([[T1, true], [T2, true]])
    expect(rec.conflict).to.equal(conflictId(S, T1, T2))
    expect((ledger.recs.get(DOUBLE_SPENDS)!.get(rec.conflict) as DoubleSpendProof).distrusted).to.deep.equal(['p1'])
    expect(events).to.deep.include({ kind: 'arbiter-distrusted' })
    expect(warns.some((w) => w.includes('arbiter p1 distrusted'))).to.equal(true)
    // restarted: the distrust is read back
    const { e: after } = watch(ledger)
    expect(after.distrusted('p1')).to.equal(false)
    await after.load()
    expect(after.distrusted('p1')).to.equal(true)
    expect((await after.distrustedList()).map((r) => r.peer)).to.deep.equal(['p1'])
    // a distrusted arbiter's grants start nothing (another state, two final grants of it alone)
    const S2 = 'b'.repeat(64)
    after.observe('quorum', [{ stateHash: S2, txid: T1, grants: [grant('p1', T1, 'final', [S2])] }])
    after.observe('quorum', [{ stateHash: S2, txid: T2, grants: [grant('p1', T2, 'final', [S2])] }])
    await after.settled()
    expect(ledger.recs.get(DOUBLE_SPENDS)!.size).to.equal(1)
  })

  it('the evidence and the distrust land together or not at all (a failed commit distrusts nobody, and the next sight keeps both)', async () => {
    const { e, ledger } = watch()
    ledger.refuseCommit = (recs) => recs.some((r) => r.collection === DISTRUSTED)
    e.observe('quorum', [cert(T1, ['p1'], 'final')])
    e.observe('quorum', [cert(T2, ['p1'], 'final')])
    await e.settled()
    expect(e.distrusted('p1')).to.equal(false)
    expect(ledger.recs.get(DOUBLE_SPENDS)?.size ?? 0).to.equal(0)
    ledger.refuseCommit = undefined
    e.observe('quorum', [cert(T2, ['p1'], 'final')])
    await e.settled()
    expect(e.distrusted('p1')).to.equal(true)
    expect(ledger.recs.get(DOUBLE_SPENDS)!.size).to.equal(1)
  })

  it('forged grants are no evidence: they distrust nobody, and a forged first certificate does not hide the real conflict after it', async () => {
    const { e, ledger, events } = watch()
    e.observe('receiver', [cert(T1, ['p1', 'p2'], 'forged')])
    e.observe('receiver', [cert(T2, ['p1', 'p2'], 'final')])
    await e.settled()
    expect(e.distrusted('p1')).to.equal(false)
    expect(ledger.recs.get(DOUBLE_SPENDS)?.size ?? 0).to.equal(0)
    expect(events).to.deep.equal([])
    // the real certificate of T2 now stands for the state: a final conflict with it is proof
    const T3 = '3'.repeat(64)
    e.observe('receiver', [cert(T3, ['p1'], 'final')])
    await e.settled()
    expect(e.distrusted('p1')).to.equal(true)
    // a forged grant claiming to be final on one side, real on the other, proves nothing
    const S2 = 'c'.repeat(64)
    e.observe('receiver', [{ stateHash: S2, txid: T1, grants: [grant('p2', T1, 'final', [S2])] }])
    e.observe('receiver', [{ stateHash: S2, txid: T2, grants: [grant('p2', T2, 'forged', [S2])] }])
    await e.settled()
    expect(e.distrusted('p2')).to.equal(false)
  })

  it('an arbiter whose grant of T1 was seen first and whose seal of T1 came later is proven by its seal of T2, even after the pair was kept unproven', async () => {
    const { e } = watch()
    const sealOf = (txid: string): PeerGrant & { seal: true } => ({ ...grant('p1', txid, 'final'), seal: true })
    e.observe('quorum', [cert(T1, ['p1'])])
    e.observe('receiver', [{ stateHash: S, txid: T2, grants: [sealOf(T2)] }])
    await e.settled()
    expect(e.distrusted('p1')).to.equal(false)
    // its seal of T1 takes its grant's place, and the pair is seen again
    e.observe('receiver', [{ stateHash: S, txid: T1, grants: [sealOf(T1)] }])
    e.observe('receiver', [{ stateHash: S, txid: T2, grants: [sealOf(T2)] }])
    await e.settled()
    expect(e.distrusted('p1')).to.equal(true)
  })

  it('a grant that does not name the state is not taken for it', async () => {
    const { e, ledger } = watch()
    e.observe('quorum', [cert(T1, ['p1'], 'final')])
    e.observe('quorum', [{ stateHash: S, txid: T2, grants: [grant('p1', T2, 'final', ['d'.repeat(64)])] }])
    await e.settled()
    expect(e.distrusted('p1')).to.equal(false)
    expect(ledger.recs.get(DOUBLE_SPENDS)?.size ?? 0).to.equal(0)
  })

  it('a certificate of 1,000 states from 20 arbiters (grants of 64 states, as arbiters sign them) is remembered whole: a conflict on its first state is still found', async () => {
    const { e, ledger } = watch()
    const hs = Array.from({ length: 1000 }, (_, i) => (i + 1).toString(16).padStart(64, '0'))
    const certs = hs.map((h) => ({ stateHash: h, txid: T1, grants: [] as PeerGrant[] }))
    for (let a = 0; a < 20; a++) {
      for (let i = 0; i < hs.length; i += 64) {
        const g = grant(`p${a}`, T1, 'good', hs.slice(i, i + 64))
        for (let j = i; j < Math.min(i + 64, hs.length); j++) certs[j]!.grants.push(g)
      }
    }
    e.observe('receiver', certs)
    e.observe('receiver', [{ stateHash: hs[0]!, txid: T2, grants: [grant('p0', T2, 'good', [hs[0]!])] }])
    e.observe('receiver', [{ stateHash: hs[999]!, txid: T2, grants: [grant('p0', T2, 'good', [hs[999]!])] }])
    await e.settled()
    expect(ledger.recs.get(DOUBLE_SPENDS)?.size ?? 0).to.equal(2)
  })

  it(`keeps at most ${CERT_CONFLICTS_MAX} conflicts that prove nothing; past it they are counted and logged, and proofs are still kept`, async () => {
    const { e, ledger, events, warns } = watch()
    const state = (i: number): string => i.toString(16).padStart(64, '0')
    for (let i = 0; i < CERT_CONFLICTS_MAX + 5; i++) {
      e.observe('receiver', [{ stateHash: state(i), txid: T1, grants: [grant('p1', T1, 'good', [state(i)])] }])
      e.observe('receiver', [{ stateHash: state(i), txid: T2, grants: [grant('p1', T2, 'good', [state(i)])] }])
    }
    await e.settled()
    expect(ledger.recs.get(DOUBLE_SPENDS)!.size).to.equal(CERT_CONFLICTS_MAX)
    expect(events.filter((x) => x.kind === 'double-spend')).to.have.length(CERT_CONFLICTS_MAX + 5)
    expect(warns.filter((w) => w.includes('not kept'))).to.have.length(5)
    // a restarted node counts what it keeps: still full
    const { e: after } = watch(ledger)
    await after.load()
    after.observe('receiver', [{ stateHash: state(9999), txid: T1, grants: [grant('p1', T1, 'good', [state(9999)])] }])
    after.observe('receiver', [{ stateHash: state(9999), txid: T2, grants: [grant('p1', T2, 'good', [state(9999)])] }])
    await after.settled()
    expect(ledger.recs.get(DOUBLE_SPENDS)!.size).to.equal(CERT_CONFLICTS_MAX)
    // a proof is kept all the same
    after.observe('receiver', [{ stateHash: state(9998), txid: T1, grants: [grant('p9', T1, 'final', [state(9998)])] }])
    after.observe('receiver', [{ stateHash: state(9998), txid: T2, grants: [grant('p9', T2, 'final', [state(9998)])] }])
    await after.settled()
    expect(after.distrusted('p9')).to.equal(true)
    expect(ledger.recs.get(DOUBLE_SPENDS)!.size).to.equal(CERT_CONFLICTS_MAX + 1)
  })
})
