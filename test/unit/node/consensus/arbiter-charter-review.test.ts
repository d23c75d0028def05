import { expect } from 'chai'
import { silentLogger } from '../../../../src/util/logger.js'
import { ErrorCode, RbtError } from '../../../../src/util/errors.js'
import { type WireRegistration } from '../../../../src/node/consensus/arbiter-committee.js'
import { ClaimTable } from '../../../../src/consensus/claims.js'
import { nodeStateClaims } from '../../../../src/node/consensus/state-claims.js'
import type { ArbiterView } from '../../../../src/node/consensus/arbiter-view.js'
import type { NodeSpentMarkers } from '../../../../src/node/consensus/spent-markers.js'
import type { P2pHost } from '../../../../src/p2p/host.js'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { memoryClaimStore } from '../../consensus/harness.js'
import { memoryCollection } from '../../../helpers/memory-collection.js'
import { MATURITY, committeeOf, fourSeats, peerKey } from './committee-fixture.js'

/**
 * A third reading of the committee, after the charter (4 joins that stood together, made or
 * pulled, never taken back) and the pacing of batches an arbiter refuses as past its budget. Each
 * test names the hole it shows and failed on the commit it was written against.
 */

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
const B32 = 'abcdefghijklmnopqrstuvwxyz234567'
const pick = (alphabet: string, seed: string, n: number): string => {
  let out = ''
  let h = sha3Hex(seed)
  while (out.length < n) {
    for (let i = 0; i + 2 <= h.length && out.length < n; i += 2) out += alphabet[Number.parseInt(h.slice(i, i + 2), 16) % alphabet.length]!
    h = sha3Hex(h)
  }
  return out
}

/** A registration of the right shape whose signatures are junk (nothing about it verifies). */
const junkReg = (seed: string, at = 1_000_000_000): WireRegistration => ({
  reg: {
    v: 1,
    did: `bafybmi${pick(B32, `did${seed}`, 52)}`,
    peer: `12D3KooW${pick(B58, `peer${seed}`, 44)}`,
    stake: [{ token: `Qm${pick(B58, `token${seed}`, 44)}`, block: `1-${sha3Hex(`block${seed}`)}` }],
    at,
    sig: 'ab'.repeat(32),
    peerSig: 'cd'.repeat(32)
  },
  chains: {},
  contents: {}
})

describe('node: the arbiter charter, third review', function () {
  this.timeout(120_000)

  it('HOLE always too many: an arbiter that answers every request TOO_MANY_REQUESTS holds a receiver\'s check no longer than a silent one', async () => {
    // withinBudget sends a batch again, for up to 30 s, while the arbiter answers that this node is
    // past its budget. An arbiter that answers so to every request, at once (cheaper than hanging),
    // holds every check that asks it (the receiver's earlier blocks, the sender's seal) 30 s,
    // against 3 s (the call's timeout) for one that does not answer at all: one seat, one whole RBT,
    // slows every transfer of the network tenfold
    const seats = await Promise.all(Array.from({ length: 4 }, async () => await peerKey()))
    const self = (await peerKey()).peer
    const claimsOf = (peerId: string, sign: (d: Uint8Array) => Promise<Uint8Array>, rpc?: RpcClient<never>): ReturnType<typeof nodeStateClaims> => nodeStateClaims({
      host: () => ({ peerId, signAsPeer: sign, closestKnownPeers: () => [] }) as unknown as P2pHost,
      rpc: () => rpc as never,
      table: new ClaimTable(memoryClaimStore(), { now: () => Date.now() }),
      view: { closest: () => [] } as unknown as ArbiterView,
      markers: {} as unknown as NodeSpentMarkers,
      verifier: { verify: async () => true },
      quorumSigner: () => undefined,
      outcome: async () => 'pending',
      log: silentLogger,
      timeoutMs: 500,
      committee: () => seats.map((x) => x.peer)
    })
    const served = new Map(seats.map((x) => [x.peer, claimsOf(x.peer, x.sign)]))
    const jammer = seats[0]!.peer
    let asked = 0
    const rpc = {
      call: async (peer: string, method: string, req: never) => {
        if (method !== 'claims.seal') throw new Error('not served')
        if (peer === jammer) { asked++; throw new RbtError(ErrorCode.TOO_MANY_REQUESTS, 'past this arbiter\'s budget') }
        return await served.get(peer)!.serveSeal!(req, self)
      }
    } as unknown as RpcClient<never>
    const receiver = claimsOf(self, async () => new Uint8Array(64), rpc)
    const items = [{ stateHash: sha3Hex('an earlier state'), holder: sha3Hex('its spend') }]
    const t0 = Date.now()
    const r = await receiver.priorSeals!(items)
    const took = Date.now() - t0
    expect(r.refused).to.equal(undefined)
    expect(took, `held ${took} ms by one arbiter answering TOO_MANY_REQUESTS (${asked} times), a silent one costs the 500 ms timeout`).to.be.below(3 * 500)
  })
})
