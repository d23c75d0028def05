import { expect } from 'chai'
import { complete, quorumNetwork, rbtBalance, USER_PASSWORD, type QuorumNetwork } from '../helpers/quorum-network.js'
import { waitFor } from '../helpers/wait.js'
import { runCli } from '../helpers/cli.js'

describe('e2e: the test network faucet', function () {
  this.timeout(120_000)
  let net: QuorumNetwork
  before(async () => { net = await quorumNetwork() })

  it('issues test RBT to a DID on another node through normal consensus', async () => {
    const { b, bob } = net
    const before = await rbtBalance(b.client, bob)
    // the faucet's DHT record may need a moment after the network forms
    const env = await waitFor<{ status: boolean, message: string, result: unknown }>(async () => {
      const first = await b.client.envelope('tokensFaucet', { body: { did: bob, token_count: 2 } })
      if (!first.status) return undefined
      const done = await complete(b.client, first, USER_PASSWORD)
      if (!done.status && /no faucet found/.test(done.message)) return undefined
      return done
    }, { timeoutMs: 60_000, intervalMs: 500, what: 'the faucet to answer' }).catch((e) => {
      throw new Error(`${(e as Error).message}\n--- faucet node ---\n${net.quorums[0].logs.slice(-3000)}\n--- B ---\n${b.logs.slice(-2000)}`)
    })
    expect(env.status, env.message).to.equal(true)
    expect(env.message).to.match(/Faucet sent 2 test RBT in transaction [0-9a-f]{64}/)
    expect(Math.round((await rbtBalance(b.client, bob) - before) * 1000)).to.equal(2000)
  })

  it('generatefaucetrbt: the reference\'s verb asks the faucet, answers the password request and prints the transaction id', async () => {
    const { b, bob } = net
    const before = await rbtBalance(b.client, bob)
    const r = await runCli(['generatefaucetrbt', ...b.cliArgs, '-did', bob, '-numTokens', '1', '-privPWD', USER_PASSWORD], { timeoutMs: 110_000 })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout.trim()).to.match(/^[0-9a-f]{64}$/)
    expect(r.stderr).to.match(/\[INFO\] Faucet sent 1 test RBT in transaction [0-9a-f]{64}/)
    expect(Math.round((await rbtBalance(b.client, bob) - before) * 1000)).to.equal(1000)
  })

  it('refuses bad requests', async () => {
    const r = await net.b.client.envelope('tokensFaucet', { body: { did: net.bob, token_count: 0 } })
    expect(r.status).to.equal(false)
    expect(r.httpStatus).to.equal(400)
  })
})
