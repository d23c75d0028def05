import { expect } from 'chai'
import { SenderClaims } from '../../../src/consensus/sender-claims.js'
import { OUTGOING_CERT, SenderContext } from '../../../src/consensus/sender-context.js'
import type { OutgoingRecord } from '../../../src/consensus/records.js'
import type { PeerGrant, PeerSeal } from '../../../src/consensus/claim-proofs.js'
import type { ClaimResult } from '../../../src/consensus/claims.js'
import type { PrepareReply } from '../../../src/consensus/messages.js'
import type { Ledger, StateClaims } from '../../../src/consensus/ports.js'
import { createContract, encodeContractEnvelope, transactionId, withContractSignature } from '../../../src/tokenchain/contract.js'
import { blockIdFor, createBlock, testTokenGenesis } from '../../../src/tokenchain/block.js'
import { ContractType, PledgeMode } from '../../../src/tokenchain/types.js'
import { silentLogger } from '../../../src/util/logger.js'

type Vote = Extract<PrepareReply, { vote: 'yes' }>

/**
 * The sender's claim when the seats among the signers granted their claims as they voted
 * (docs/protocol.md, "Grants in the votes"): the claim round is skipped only while those grants
 * are all a signer needs. A signer that found them short, or a seal that fell short, has the
 * claim made at every arbiter, as before.
 */
describe('sender claims: grants in the votes', () => {
  const ALICE = 'bafybmialice'
  const TOKEN = 'a'.repeat(64)
  const BLOCK = blockIdFor(createBlock(testTokenGenesis({ tokenId: TOKEN, owner: ALICE })), TOKEN)
  const c = createContract({ type: ContractType.RBT_DIRECT, pledgeMode: PledgeMode.PERIODIC, transInfo: { sender: ALICE, receiver: 'bafybmibob', transTokens: { [TOKEN]: { tokenType: 0, tokenValue: 1, owner: ALICE, blockId: BLOCK } } }, totalRbts: 1 })
  const contract = encodeContractEnvelope(withContractSignature(c, ALICE, 'ab'))
  const txid = transactionId(contract)
  const quorums = ['bafybmiqa', 'bafybmiqb', 'bafybmiqc', 'bafybmiqd', 'bafybmiqe']
  const nonce = (i: number): string => (0xd0 + i).toString(16).padStart(32, '0')
  const state = `${TOKEN}@${BLOCK}`
  const votes: Vote[] = quorums.map((q, i) => ({
    vote: 'yes',
    quorumDid: q,
    credit: { did: q, hash: txid, signType: '0', signature: '', privSignature: 'ab' },
    pledge: [],
    pledgeMilli: 0,
    claim: { nonce: nonce(i), sig: 'ab', states: [state] },
    // each signer's node holds a seat and granted its claim as it voted
    grants: [{ peer: `seat-${i}`, sig: 'ab'.repeat(32), txid, quorum: q, nonce: nonce(i), forTx: txid, states: ['s'] }]
  }))
  const ledger = { chain: async () => undefined } as unknown as Ledger

  const seal = (peer: string): PeerSeal => ({ peer, holder: txid, states: ['s'], sig: 'ab'.repeat(32) })

  /** A ledger of records only, in memory: what the sender keeps beside a decided transfer. */
  function recordStore (): { records: Map<string, unknown>, store: Ledger } {
    const records = new Map<string, unknown>()
    const store = {
      chain: async () => undefined,
      record: async (col: string, key: string) => records.get(`${col}/${key}`),
      commit: async (build: (w: unknown) => void) => {
        build({ putRecord: (col: string, key: string, v: unknown) => { records.set(`${col}/${key}`, v) }, delRecord: (col: string, key: string) => { records.delete(`${col}/${key}`) } })
      }
    } as unknown as Ledger
    return { records, store }
  }

  /** A port whose votes' grants are enough for every signer as the sender counts; it records the claims made at the arbiters. */
  function port (): { port: StateClaims, claimed: string[][] } {
    const claimed: string[][] = []
    return {
      claimed,
      port: {
        checkGrants: async (): Promise<ClaimResult> => ({ granted: true, tallies: [] }),
        claimFor: async (_tx: string, claimants: ReadonlyArray<{ quorum: string, nonce: string }>) => {
          claimed.push(claimants.map((x) => x.quorum))
          return { granted: true, tallies: [], grants: claimants.map((x): PeerGrant => ({ peer: 'arbiter', sig: 'cd'.repeat(32), txid, quorum: x.quorum, nonce: x.nonce, forTx: txid, states: ['s'] })) }
        },
        sealFor: async () => ({ granted: false, code: 'CLAIM_UNREACHABLE', reason: 'short', tallies: [], seals: [] as PeerSeal[] })
      } as unknown as StateClaims
    }
  }

  it('skips the claim round when the votes\' grants suffice', async () => {
    const p = port()
    const claims = new SenderClaims(p.port, ledger, silentLogger)
    expect((await claims.claim(txid, contract, votes)).granted).to.equal(true)
    expect(p.claimed).to.deep.equal([])
    expect(claims.grantsFor(txid, quorums[0]!)).to.have.length(5)
  })

  it('a signer that found the grants short (one from before grants in the votes, or one counting another seat) has its claim made at the arbiters, not the same grants again', async () => {
    const p = port()
    const claims = new SenderClaims(p.port, ledger, silentLogger)
    await claims.claim(txid, contract, votes)
    // the sign round: quorum e refused CLAIM_UNREACHABLE, its grants are dropped and claimed again
    claims.drop(txid, [quorums[4]!])
    expect((await claims.claim(txid, contract, votes)).granted).to.equal(true)
    expect(p.claimed, 'the claim is made at the arbiters').to.deep.equal([[quorums[4]]])
    expect(claims.grantsFor(txid, quorums[4]!)!.some((g) => g.quorum === quorums[4] && g.peer === 'arbiter')).to.equal(true)
  })

  it('a seal that fell short (a seat among the signers that did not seal its record) has all five claimed at every arbiter, so that the others hold the records to seal', async () => {
    const p = port()
    const claims = new SenderClaims(p.port, ledger, silentLogger)
    await claims.claim(txid, contract, votes)
    // the sign round's retry after a seal that fell short: the five dropped and claimed again
    claims.drop(txid, quorums)
    await claims.claim(txid, contract, votes)
    expect(p.claimed).to.deep.equal([quorums])
  })

  it('the seals gathered when a receiver found the certificate short are kept in place of the decision\'s, so that a sender restarted before the delivery shows them; none once delivered', async () => {
    const { records, store } = recordStore()
    let asked = 0
    const port = {
      sealFor: async () => ({ granted: true, tallies: [], seals: [seal('seat-0')], grow: async () => { asked++; return [seal('seat-5'), seal('seat-6')] } })
    } as unknown as StateClaims
    const ctx = new SenderContext({ ledger: store, transport: {}, claims: port } as never, { now: () => Date.now() }, silentLogger)
    const rec = { txid } as unknown as OutgoingRecord
    expect((await ctx.claims!.seal(txid, contract, votes, [], [])).granted).to.equal(true)
    expect(asked, 'not grown before a receiver asks').to.equal(0)
    // the decision keeps the certificate as it is then
    records.set(`${OUTGOING_CERT}/${txid}`, { seals: [...ctx.claims!.certificate(txid)!], regrow: ctx.claims!.regrowth(txid, votes, []) })
    expect(await ctx.growCertificate(rec)).to.equal(true)
    expect(records.get(`${OUTGOING_CERT}/${txid}`)).to.deep.equal({ seals: [seal('seat-0'), seal('seat-5'), seal('seat-6')] })
    expect((await ctx.certificateOf(rec))!.map((g) => g.peer)).to.deep.equal(['seat-0', 'seat-5', 'seat-6'])
    // grown once: nothing more to gather
    expect(await ctx.growCertificate(rec)).to.equal(false)
    // delivered meanwhile: the record is gone and stays gone
    records.delete(`${OUTGOING_CERT}/${txid}`)
    const other = new SenderContext({ ledger: store, transport: {}, claims: port } as never, { now: () => Date.now() }, silentLogger)
    expect(await other.growCertificate(rec)).to.equal(false)
    expect(records.has(`${OUTGOING_CERT}/${txid}`)).to.equal(false)
  })

  it('a sender restarted after an early decision gathers the other seats\' seals, when a receiver found the certificate short, from the claims and consents kept with the decision', async () => {
    const { records, store } = recordStore()
    const consents = quorums.map((q, i) => ({ quorum: q, nonce: nonce(i), secret: 'ee'.repeat(16) }))
    const signers = quorums.map((_, i) => seal(`seat-${i}`))
    const asked: string[] = []
    // the seats of the five signers sealed as they signed; the other two are claimed, then sealed
    const port = (alive: boolean): StateClaims => ({
      claimFor: async (_tx: string, claimants: ReadonlyArray<{ quorum: string }>, _s: unknown, _b: unknown, _c: unknown, _p: unknown, only?: readonly string[]) => {
        asked.push(`claim ${claimants.length} at ${String(only)}`)
        return { granted: true, tallies: [], grants: [] }
      },
      sealFor: async (_tx: string, _items: unknown, shown: ReadonlyArray<{ quorum: string }>, _peers: unknown, presealed: PeerSeal[], before?: (others: readonly string[]) => Promise<void>) => {
        asked.push(`seal with ${shown.length} consents, ${presealed.length} shown`)
        const grow = async (): Promise<PeerSeal[]> => { if (!alive) throw new Error('the process stopped'); await before?.(['seat-5', 'seat-6']); return [seal('seat-5'), seal('seat-6')] }
        return { granted: true, tallies: [], seals: [...presealed], grow }
      }
    } as unknown as StateClaims)
    // the deciding process: what it keeps with the decision while the other seats are still asked
    const deciding = new SenderClaims(port(false), ledger, silentLogger)
    await deciding.claim(txid, contract, votes)
    expect((await deciding.seal(txid, contract, votes, consents, signers)).granted).to.equal(true)
    const regrow = deciding.regrowth(txid, votes, consents)
    expect(regrow?.claims.map((x) => x.quorum)).to.deep.equal(quorums)
    records.set(`${OUTGOING_CERT}/${txid}`, JSON.parse(JSON.stringify({ seals: signers, regrow })))
    // restarted: a new process, nothing in memory
    const ctx = new SenderContext({ ledger: store, transport: {}, claims: port(true) } as never, { now: () => Date.now() }, silentLogger)
    const rec = { txid, contract: Buffer.from(contract).toString('base64') } as unknown as OutgoingRecord
    asked.length = 0
    // delivered as kept first; refused as short by a receiver counting a seat more, then grown
    expect(await ctx.certificateOf(rec)).to.have.length(5)
    expect(asked).to.deep.equal([])
    expect(await ctx.growCertificate(rec)).to.equal(true)
    const shown = await ctx.certificateOf(rec)
    expect(shown!.map((g) => g.peer)).to.deep.equal([...quorums.map((_, i) => `seat-${i}`), 'seat-5', 'seat-6'])
    expect(asked).to.deep.equal(['seal with 5 consents, 5 shown', 'claim 5 at seat-5,seat-6'])
    // kept grown, with nothing left to grow
    expect(records.get(`${OUTGOING_CERT}/${txid}`)).to.deep.equal({ seals: shown })
    asked.length = 0
    const again = new SenderContext({ ledger: store, transport: {}, claims: port(true) } as never, { now: () => Date.now() }, silentLogger)
    expect(await again.certificateOf(rec)).to.have.length(7)
    expect(await again.growCertificate(rec), 'nothing left to grow').to.equal(false)
    expect(asked).to.deep.equal([])
  })

  it('a decision sealed at every arbiter keeps nothing to grow', async () => {
    const port = { sealFor: async () => ({ granted: true, tallies: [], seals: [] as PeerSeal[] }) } as unknown as StateClaims
    const claims = new SenderClaims(port, ledger, silentLogger)
    expect((await claims.seal(txid, contract, votes, [], [])).granted).to.equal(true)
    expect(claims.regrowth(txid, votes, [])).to.equal(undefined)
  })
})
