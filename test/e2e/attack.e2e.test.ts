import { randomBytes } from 'node:crypto'
import { expect } from 'chai'
import { tokenStateHash } from '../../src/tokenchain/token-id.js'
import { AttackerPeer } from '../helpers/attacker/attacker-peer.js'
import { attackNetwork, evictRelease, strangerClaims, sybilArbiters, type AttackNet } from '../helpers/attacker/attacks.js'
import { NodeProcess } from '../helpers/node-process.js'
import { FIXTURE_ENV } from '../helpers/quorum-network.js'

/**
 * The cheating owner's peer against one real arbiter (a node process on 127.0.0.1, discovery off),
 * over the node's real rpc: the first step of cases 1 and 6, which need no network of quorums.
 */
describe('e2e: a stranger\'s claims at a real arbiter', function () {
  this.timeout(300_000)
  let node: NodeProcess
  let peer: AttackerPeer
  let arbiter: string
  const state = (): string => tokenStateHash(`Qm${randomBytes(8).toString('hex')}`, `0-${randomBytes(32).toString('hex')}`)

  before(async function () {
    this.timeout(240_000)
    node = await new NodeProcess({ n: 0, extraArgs: ['-testNet'], env: FIXTURE_ENV, startTimeoutMs: 180_000 }).start()
    peer = await AttackerPeer.start()
    ;[arbiter] = await peer.connect([node.multiaddr])
  })
  after(async function () {
    this.timeout(60_000)
    await peer?.stop()
    await node?.dispose()
  })

  it('a claim of a state for a made-up transaction, with no proof, is refused before any write (nothing is pinned)', async () => {
    expect(await peer.pin(arbiter!, [state(), state()])).to.equal(0)
  })

  it('16 claims of one transaction under 16 quorum strings and a release free nothing (no claimant can be pushed out and released by a stranger)', async () => {
    const s = state()
    expect(await peer.evict(arbiter!, randomBytes(32).toString('hex'), s)).to.be.at.most(0)
  })
})

/**
 * The cheating owner (docs/security.md, "Threat model"), a fast subset of `npm run bench -- attack`
 * on one network: the race network's fifteen real nodes (two disjoint quorum sets, the owner's
 * nodes X and Y) and the owner's own peers speaking the nodes' rpc from this process
 * (test/helpers/attacker/), every quorum seated on the arbiter committee. Each attack must leave
 * the token paid at most once, and an honest wallet able to pay.
 */
describe('e2e: a cheating owner cannot pay one token twice', function () {
  this.timeout(900_000)
  let an: AttackNet
  const log = (s: string): void => { if (process.env.E2E_VERBOSE === '1') process.stdout.write(`      ${s}\n`) }

  before(async function () {
    this.timeout(600_000)
    an = await attackNetwork({ log, honestRbt: 12, committee: true, requireCommittee: true })
  })
  after(async function () {
    this.timeout(120_000)
    await an?.close()
  })

  // case 5 before any seat: nodes that count only seats (require_committee) pay nothing while
  // peers would be the arbiters, and say why
  it('a node that requires the committee refused the payer\'s transfer before any seat stood, saying why', () => {
    expect(an.beforeSeats?.status).to.equal(false)
    expect(an.beforeSeats?.message).to.match(/no arbiter committee is in force yet/)
  })

  it('evict then release: a peer that claims the live transaction under 16 quorum strings and releases it does not free the state for a conflicting spend', async () => {
    const r = await evictRelease(an, 1, log)
    expect(r.paidTwice, r.notes.join(' | ')).to.equal(0)
  })

  // case 5: the owner's Sybils are peers with no seat; the quorums' seats are the arbiters
  it('Sybil arbiters: 20 peer ids ground next to the state\'s key, granting and sealing every claim, do not let both spends through once the committee is in force', async () => {
    // with the committee in force the Sybils' links do not matter: the attack waits at most 15 s for them
    const r = await sybilArbiters(an, 1, log, { joinMs: 15_000 })
    expect(r.paidTwice, r.notes.join(' | ')).to.equal(0)
  })

  it('stranger claims: a peer that claims a wallet\'s states for a made-up transaction does not stop the wallet from paying', async () => {
    const r = await strangerClaims(an)
    expect(r.victimOk, r.note).to.equal(2)
  })
})
