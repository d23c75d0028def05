import { expect } from 'chai'
import { checkInvariants, type ChaosState, type Expected, type OpView, type TokenView, type TxView } from '../../../bench/chaos/invariants.js'

const A = 'bafyAliceDidxxxxxxxxxxxx'
const B = 'bafyBobDidxxxxxxxxxxxxxx'
const Q = 'bafyQuorumDidxxxxxxxxxxx'

/** A settled network: alice (node u0) sent 1.5 RBT, 5 FTs and the NFT to bob (node u1). */
function clean (): { state: ChaosState, expected: Expected, ops: OpView[] } {
  const tok = (node: string, tokenId: string, kind: string, value: number, owner: string, status: string, extra: Partial<TokenView> = {}): TokenView => ({ node, tokenId, kind, value, owner, status, ...extra })
  const tokens: TokenView[] = [
    tok('u0', 'r1', 'rbt', 1000, A, 'Free'),
    tok('u0', 'r2', 'rbt', 1000, B, 'Transferred'),
    tok('u1', 'r2', 'rbt', 1000, B, 'Free'),
    tok('u0', 'r3', 'rbt', 1000, A, 'Burnt'),
    tok('u0', 'p1', 'part', 500, A, 'Free', { parent: 'r3' } as never),
    tok('u1', 'p2', 'part', 500, B, 'Free'),
    tok('q0', 'rq', 'rbt', 1000, Q, 'Pledged'),
    ...Array.from({ length: 10 }, (_, i) => tok(i < 5 ? 'u0' : 'u1', `f${i}`, 'ft', 100, i < 5 ? A : B, 'Free', { ftName: 'X', creator: A })),
    tok('u1', 'n1', 'nft', 0, B, 'Free'),
    tok('u0', 'n1', 'nft', 0, B, 'Transferred')
  ]
  const txs: TxView[] = [
    { node: 'u0', did: A, txid: 't1', memo: 'm1', status: 'committed' },
    { node: 'u1', did: B, txid: 't1', memo: 'm1', status: 'committed' }
  ]
  const state: ChaosState = { hosted: { u0: [A], u1: [B], q0: [Q] }, tokens, txs, chainProblems: [], audits: { u0: [], u1: [], q0: [] } }
  const expected: Expected = { rbtMilli: 4000, ft: { [`X@${A}`]: 10 }, nfts: ['n1'] }
  const ops: OpView[] = [
    { id: 1, kind: 'rbt', memo: 'm1', from: A, to: B, outcome: 'ok' },
    { id: 2, kind: 'rbt', memo: 'm2', from: A, to: B, outcome: 'failed', detail: 'insufficient balance' },
    { id: 3, kind: 'ft', memo: 'm3', from: A, to: B, outcome: 'unknown' }
  ]
  return { state, expected, ops }
}

describe('chaos: invariant checks', () => {
  it('a settled, conserved state passes', () => {
    const { state, expected, ops } = clean()
    const v = checkInvariants(state, expected, ops)
    expect(v.problems).to.deep.equal([])
    expect([v.lost, v.duplicated, v.stuck]).to.deep.equal([0, 0, 0])
    expect(v.counts).to.include({ rbtMilli: 4000, ftUnits: 10, nfts: 1, committedOps: 1, refusedOps: 1, unknownOps: 1 })
  })

  it('a second Free copy of a token on another node is a duplicate', () => {
    const { state, expected, ops } = clean()
    state.hosted.u0!.push('bafyCarol')
    state.tokens.push({ node: 'u0', tokenId: 'r2', kind: 'rbt', value: 1000, owner: 'bafyCarol', status: 'Free' })
    const v = checkInvariants(state, expected, ops)
    expect(v.duplicated).to.be.at.least(1)
    expect(v.problems.join('\n')).to.match(/token r2 held 2 times/)
  })

  it('a restored wallet\'s stale copy of a token it spent from its other node is not a holding; two owners at the latest block are a double spend', () => {
    const { state, expected, ops } = clean()
    // r2 moved from A to B at block 1; A's wallet restored on q0's node still shows its copy Free at block 0
    for (const t of state.tokens) if (t.tokenId === 'r2') t.height = 1
    state.hosted.q0!.push(A)
    state.tokens.push({ node: 'q0', tokenId: 'r2', kind: 'rbt', value: 1000, owner: A, status: 'Free', height: 0 })
    const v = checkInvariants(state, expected, ops)
    expect(v.problems).to.deep.equal([])
    expect(v.counts.staleCopies).to.equal(1)
    // the same state spent twice: carol also holds r2 at block 1
    state.hosted.q0!.push('bafyCarol')
    state.tokens.push({ node: 'q0', tokenId: 'r2', kind: 'rbt', value: 1000, owner: 'bafyCarol', status: 'Free', height: 1 })
    const twice = checkInvariants(state, expected, ops)
    expect(twice.duplicated).to.equal(1)
    expect(twice.problems.join('\n')).to.match(/token r2 held 2 times/)
  })

  it('RBT missing from the total is lost; RBT made up is a duplicate', () => {
    const a = clean()
    a.state.tokens = a.state.tokens.filter((t) => t.tokenId !== 'p2')
    const lost = checkInvariants(a.state, a.expected, a.ops)
    expect(lost.lost).to.equal(1)
    expect(lost.problems.join('\n')).to.match(/0\.5 lost/)
    const b = clean()
    b.state.tokens.push({ node: 'u1', tokenId: 'p9', kind: 'part', value: 250, owner: B, status: 'Free' })
    expect(checkInvariants(b.state, b.expected, b.ops).duplicated).to.equal(1)
  })

  it('FT units and NFTs are conserved', () => {
    const a = clean()
    a.state.tokens = a.state.tokens.filter((t) => t.tokenId !== 'f3' && !(t.tokenId === 'n1' && t.status === 'Free'))
    const v = checkInvariants(a.state, a.expected, a.ops)
    expect(v.lost).to.equal(2)
    expect(v.problems.join('\n')).to.match(/FT X@.*9 held, 10 minted/).and.match(/NFT n1 is held by no DID/)
  })

  it('a token still Locked, or a transfer still open, is stuck', () => {
    const a = clean()
    a.state.tokens.find((t) => t.tokenId === 'r1')!.status = 'Locked'
    a.state.txs.push({ node: 'u0', did: A, txid: 't9', memo: 'm9', status: 'delivery_pending' })
    const v = checkInvariants(a.state, a.expected, a.ops)
    expect(v.stuck).to.equal(2)
    expect(v.problems.join('\n')).to.match(/r1 still Locked/).and.match(/t9 has not finished/)
  })

  it('an operation the client saw succeed that the receiver does not have is lost', () => {
    const a = clean()
    a.state.txs = a.state.txs.filter((t) => t.did !== B)
    const v = checkInvariants(a.state, a.expected, a.ops)
    expect(v.lost).to.equal(1)
    expect(v.problems.join('\n')).to.match(/op 1 .* not committed at the receiver/)
    // a DELIVERY_PENDING answer must have resolved too
    const b = clean()
    b.ops[0]!.outcome = 'pending'
    b.state.txs = b.state.txs.filter((t) => t.did !== B)
    expect(checkInvariants(b.state, b.expected, b.ops).lost).to.equal(1)
  })

  it('a refused operation that is committed after all, or an unknown one committed on one side, fails the run', () => {
    const a = clean()
    a.state.txs.push({ node: 'u0', did: A, txid: 't2', memo: 'm2', status: 'committed' })
    a.state.txs.push({ node: 'u0', did: A, txid: 't3', memo: 'm3', status: 'committed' })
    const v = checkInvariants(a.state, a.expected, a.ops)
    expect(v.problems.join('\n')).to.match(/op 2 .* refused .* but is committed/).and.match(/op 3 .* committed on one side only/)
  })

  it('invalid chains, audit problems and held records of DIDs a node does not host are reported', () => {
    const a = clean()
    a.state.chainProblems.push('u1: token r2 invalid')
    a.state.audits.q0!.push('owner index lacks x')
    a.state.tokens.push({ node: 'q0', tokenId: 'zz', kind: 'rbt', value: 1000, owner: A, status: 'Free' })
    const v = checkInvariants(a.state, a.expected, a.ops)
    expect(v.problems).to.have.length(3)
  })
})
