import { expect } from 'chai'
import { attackNetwork, evictRelease, strangerClaims, sybilArbiters, type AttackNet } from '../helpers/attacker/attacks.js'

/**
 * The cheating owner (docs/security.md, "Threat model"), a fast subset of `npm run bench -- attack`
 * on one network: the race network's fifteen real nodes (two disjoint quorum sets, the owner's
 * nodes X and Y) and the owner's own peers speaking the nodes' rpc from this process
 * (test/helpers/attacker/). Each attack must leave the token paid at most once, and an honest
 * wallet able to pay.
 */
describe('e2e: a cheating owner cannot pay one token twice', function () {
  this.timeout(900_000)
  let an: AttackNet
  const log = (s: string): void => { if (process.env.E2E_VERBOSE === '1') process.stdout.write(`      ${s}\n`) }

  before(async function () {
    this.timeout(600_000)
    an = await attackNetwork({ log, honestRbt: 12 })
  })
  after(async function () {
    this.timeout(120_000)
    await an?.close()
  })

  it('evict then release: a peer that claims the live transaction under 16 quorum strings and releases it does not free the state for a conflicting spend', async () => {
    const r = await evictRelease(an, 1, log)
    expect(r.paidTwice, r.notes.join(' | ')).to.equal(0)
  })

  it('Sybil arbiters: 20 peer ids ground next to the state\'s key, granting every claim, do not let both spends through', async () => {
    const r = await sybilArbiters(an, 1, log)
    expect(r.paidTwice, r.notes.join(' | ')).to.equal(0)
  })

  it('stranger claims: a peer that claims a wallet\'s states for a made-up transaction does not stop the wallet from paying', async () => {
    const r = await strangerClaims(an)
    expect(r.victimOk, r.note).to.equal(2)
  })
})
