import { expect } from 'chai'
import { EvidenceStore, type EvidencePart } from '../../../src/consensus/evidence-store.js'
import { putOutgoing, type OutgoingRecord } from '../../../src/consensus/records.js'
import type { ChainBundle } from '../../../src/consensus/messages.js'
import { MemoryLedger } from './harness.js'

/** A signer's evidence: its pledged token `t<i>` (a block and a content of its own) and their parent, the same for every `i`, of `shared` blocks. */
function partOf (i: number, shared: number): EvidencePart[] {
  const block = (s: string): Uint8Array => new TextEncoder().encode(s.padEnd(600, '.'))
  const bundle: ChainBundle = {
    chains: { [`t${i}`]: [block(`own ${i}`)], parent: Array.from({ length: shared }, (_, j) => block(`shared ${j}`)) },
    contents: { [`t${i}`]: `the content of t${i}`, parent: 'the parent\'s content' }
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
    // the parent's 5 blocks, its content and the ancestry naming them once, then each pledged token's block and content
    expect(written).to.have.length(5 + 1 + 1 + 3 * 2)
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
