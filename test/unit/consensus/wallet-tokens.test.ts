import { expect } from 'chai'
import { freeTokensById } from '../../../src/consensus/wallet-tokens.js'
import type { TokenState } from '../../../src/consensus/ports.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import { MemoryLedger } from './harness.js'

const token = (tokenId: string, owner: string, status: TokenState['status']): TokenState =>
  ({ tokenId, tokenType: 0, valueMilli: 1000, owner, status, latestBlockId: '0-abc', updatedAt: 0 })

describe('consensus: tokens chosen from a wallet\'s holdings', () => {
  it('reads only the ids asked for and gives them back by id', async () => {
    const ledger = new MemoryLedger()
    for (let i = 0; i < 50; i++) ledger.tokens.set(`t${i}`, token(`t${i}`, 'did:a', 'Free'))
    const got = await freeTokensById(ledger, 'did:a', ['t7', 't3'])
    expect([...got.keys()]).to.deep.equal(['t7', 't3'])
    expect(ledger.tokenReads).to.equal(2)
    expect((await freeTokensById(ledger, 'did:a', [])).size).to.equal(0)
  })

  it('refuses a token whose record is not Free, not the DID\'s, or missing, before the caller writes anything', async () => {
    const ledger = new MemoryLedger()
    ledger.tokens.set('locked', token('locked', 'did:a', 'Locked'))
    ledger.tokens.set('theirs', token('theirs', 'did:b', 'Free'))
    for (const [id, says] of [['locked', 'says Locked'], ['theirs', 'owner did:b'], ['gone', 'is missing']]) {
      const err = await freeTokensById(ledger, 'did:a', [id]).then(() => undefined, (e: unknown) => e)
      expect(err).to.be.instanceOf(RbtError)
      expect((err as RbtError).code).to.equal(ErrorCode.INTERNAL)
      expect((err as RbtError).message).to.contain(says)
    }
  })
})
