import { expect } from 'chai'
import { generateMnemonic } from '../../src/wallet/bip39.js'
import { NodeProcess } from '../helpers/node-process.js'
import { FIXTURE_ENV, complete, createLiteDid, mintRbt, quorumNetwork, rbtBalance, transfer, USER_PASSWORD, type QuorumNetwork } from '../helpers/quorum-network.js'
import { waitFor } from '../helpers/wait.js'

/**
 * A wallet paying small amounts again and again (every payment splits the rest of the last part,
 * so the rest's ancestry grows by one each time), and a wallet restored on a second node whose
 * copy of a token the first node spent. One shared network; one extra node (a fullnode).
 */
describe('e2e: many small payments, and a stale copy of a wallet', function () {
  this.timeout(900_000)
  let net: QuorumNetwork
  let full: NodeProcess | undefined

  before(async () => { net = await quorumNetwork() })
  after(async () => { await full?.dispose() })

  it('70 payments of 0.001 RBT in a row from one DID all succeed (past the 64th, which used to fail), the change reset by a self transfer every 32', async () => {
    const { a, b, bob } = net
    const payer = await createLiteDid(a.client, USER_PASSWORD)
    await mintRbt(a.client, payer, 1, 0, USER_PASSWORD)
    const bobBefore = await rbtBalance(b.client, bob)
    for (let i = 1; i <= 70; i++) {
      const r = await transfer(a.client, payer, bob, 0.001, USER_PASSWORD, `small ${i}`)
      expect(r.status, `payment ${i}: ${r.message}`).to.equal(true)
    }
    expect(await rbtBalance(a.client, payer)).to.equal(0.93)
    await waitFor(async () => Math.round((await rbtBalance(b.client, bob) - bobBefore) * 1000) === 70, { timeoutMs: 30_000, what: 'bob to hold the 70 payments' })
    // the change's line of burns was reset by a self transfer every 32 payments (payments 32 and 64)
    await waitFor(async () => (a.logs.match(/its line of burns is reset/g) ?? []).length >= 2, { timeoutMs: 10_000, what: 'two resets of the change\'s line of burns' })
    expect((a.logs.match(/the self transfer resetting the change .* failed/g) ?? []).length).to.equal(0)
  })

  it('a DID restored on a second node: the token the first node spends leaves the copy\'s balance with a WARN naming the transaction; a wallet sync shows the truth', async () => {
    const { a, b, alice } = net
    full = new NodeProcess({ n: 14, extraArgs: ['-testNet', '-fullnode'], env: FIXTURE_ENV, startTimeoutMs: 60_000 })
    await full.start()
    await net.join(full)
    // the DID lives on A, made from a mnemonic, with 2 RBT the fullnode archives
    const mnemonic = generateMnemonic()
    const did = ((await a.client.call('didCreate', { body: { type: 4, password: USER_PASSWORD, mnemonic } as never })).result as { did: string }).did
    await mintRbt(a.client, did, 2, 0, USER_PASSWORD)
    const archived = async (): Promise<boolean> => {
      const first = await b.client.envelope('sync', { body: { did, fullnode: full!.peerId } })
      if (!first.status) return false
      const done = await complete(b.client, first, USER_PASSWORD)
      return done.status && await rbtBalance(b.client, did) === 2
    }
    // and is restored on B (mnemonic and wallet sync) while A still runs
    const again = ((await b.client.call('didCreate', { body: { type: 4, password: USER_PASSWORD, mnemonic } as never })).result as { did: string }).did
    expect(again).to.equal(did)
    await waitFor(archived, { timeoutMs: 60_000, intervalMs: 1000, what: 'B to restore the DID\'s 2 RBT from the fullnode' })
    // A spends one of the tokens
    const spent = await transfer(a.client, did, alice, 1, USER_PASSWORD, 'spent on A')
    expect(spent.status, spent.message).to.equal(true)
    expect(await rbtBalance(a.client, did)).to.equal(1)
    // B learns it from the spent-state announcement, checks the chain at A and drops its copy
    await waitFor(async () => await rbtBalance(b.client, did) === 1, { timeoutMs: 60_000, what: 'B to drop the token A spent' }).catch((e: Error) => {
      throw new Error(`${e.message}\n--- B log ---\n${b.logs.split('\n').filter((l) => /spent|WARN/i.test(l)).slice(-20).join('\n')}`)
    })
    // the WARN is written just after the commit that drops the token: its line may reach this
    // process's pipe a moment after the balance shows the drop
    const warned = new RegExp(`WARN.*was spent by transaction ${spent.txid!}`)
    await waitFor(async () => warned.test(b.logs), { timeoutMs: 10_000, what: 'B\'s WARN naming the transaction' })
    // a wallet sync agrees
    const first = await b.client.envelope('sync', { body: { did, fullnode: full.peerId } })
    expect(first.status, first.message).to.equal(true)
    const done = await complete(b.client, first, USER_PASSWORD)
    expect(done.status, done.message).to.equal(true)
    expect(await rbtBalance(b.client, did)).to.equal(1)
  })
})
