import { expect } from 'chai'
import { EvidenceStore, type EvidencePart } from '../../../src/consensus/evidence-store.js'
import { putOutgoing, type OutgoingRecord } from '../../../src/consensus/records.js'
import type { ChainBundle } from '../../../src/consensus/messages.js'
import { MemoryLedger } from './harness.js'

/**
 * A signer's evidence: its pledged piece `t<i>` (a block of its own), their parent of `shared`
 * blocks, and the contents of the parent and of its 8 parts (the same for every piece of the split).
 */
function partOf (i: number, shared: number): EvidencePart[] {
  const block = (s: string): Uint8Array => new TextEncoder().encode(s.padEnd(600, '.'))
  const bundle: ChainBundle = {
    chains: { [`t${i}`]: [block(`own ${i}`)], parent: Array.from({ length: shared }, (_, j) => block(`shared ${j}`)) },
    contents: { parent: 'the parent\'s content', ...Object.fromEntries(Array.from({ length: 8 }, (_, j) => [`t${j}`, `the content of t${j}`])) }
  }
  return [{ bundle, pledged: [`t${i}`] }]
}

function record (txid: string, state: OutgoingRecord['state']): OutgoingRecord {
  return { txid, state, sender: 's', receiver: 'r', amountMilli: 1, memo: '', epoch: 0, tokens: [], contract: '', asked: ['q'], yes: [], signers: [], notified: [], block: 'AA==', createdAt: 0, updatedAt: 0 }
}

describe('consensus: the sender\'s store of pledge evidence by block', function () {
  it('writes each block, content and signer\'s ancestry once, and reads back the evidence a record names', async () => {
    const ledger = new MemoryLedger()
    const store = new EvidenceStore(ledger, 64)
    const written: string[] = []
    const commit = ledger.commit.bind(ledger)
    ledger.commit = async (build) => await commit((w) => build({ ...w, putRecord: (c, k, v) => { if (c === 'cs-evidence') written.push(k); w.putRecord(c, k, v) } }))
    for (let i = 0; i < 3; i++) {
      await store.commit(partOf(i, 5), (w, ref) => { putOutgoing(w, { ...record(`tx${i}`, 'COMMITTING'), evidence: ref }) })
    }
    // the parent's 5 blocks, the 9 contents and the ancestry naming them once, then each piece's own block
    expect(written).to.have.length(5 + 9 + 1 + 3)
    const rec = (await ledger.record<OutgoingRecord>('cs-outgoing', 'tx2'))!
    expect(Object.keys(rec.evidence!.chains), 'the record names the pledged token').to.deep.equal(['t2'])
    expect(rec.evidence!.ancestry).to.have.length(1)
    expect(await store.bundle(rec.evidence!)).to.deep.equal(partOf(2, 5)[0].bundle)
  })

  it('a store that forgot what it wrote (a restart) reads before writing: nothing is written twice', async () => {
    const ledger = new MemoryLedger()
    await new EvidenceStore(ledger, 64).commit(partOf(0, 5), (w, ref) => { putOutgoing(w, { ...record('tx0', 'COMMITTING'), evidence: ref }) })
    const before = ledger.recs.get('cs-evidence')!.size
    let written = 0
    const commit = ledger.commit.bind(ledger)
    ledger.commit = async (build) => await commit((w) => build({ ...w, putRecord: (c, k, v) => { if (c === 'cs-evidence') written++; w.putRecord(c, k, v) } }))
    await new EvidenceStore(ledger, 64).commit(partOf(0, 5), (w, ref) => { putOutgoing(w, { ...record('tx1', 'COMMITTING'), evidence: ref }) })
    expect(written).to.equal(0)
    expect(ledger.recs.get('cs-evidence')!.size).to.equal(before)
  })

  it('holds at most about twice its stated number of entries after any number of transfers, and never drops what an open transfer names', async () => {
    const ledger = new MemoryLedger()
    const keep = 8
    const store = new EvidenceStore(ledger, keep)
    // the first transfer stays open (its delivery pending); the others settle
    await store.commit(partOf(0, 2), (w, ref) => { putOutgoing(w, { ...record('open', 'COMMITTING'), evidence: ref }) })
    const sizes: number[] = []
    for (let i = 1; i <= 200; i++) {
      await store.commit(partOf(i, 2), (w, ref) => { putOutgoing(w, { ...record(`tx${i}`, 'COMMITTING'), evidence: ref }) })
      await ledger.commit((w) => { putOutgoing(w, { ...record(`tx${i}`, 'COMMITTED'), notified: ['q'] }) })
      sizes.push(ledger.recs.get('cs-evidence')?.size ?? 0)
    }
    expect(Math.max(...sizes), 'entries stored').to.be.at.most(2 * keep + 6)
    expect(store.stored).to.equal(ledger.recs.get('cs-evidence')!.size)
    const open = (await ledger.record<OutgoingRecord>('cs-outgoing', 'open'))!
    expect(await store.bundle(open.evidence!), 'the open transfer\'s evidence').to.deep.equal(partOf(0, 2)[0].bundle)
  })
})
