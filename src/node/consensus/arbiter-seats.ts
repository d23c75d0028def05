import { ARBITER_STAKE_RBT, type StakedToken } from '../../consensus/arbiter-registration.js'
import { buildBundle } from '../../consensus/bundle.js'
import { COMMITTEE_MIN } from '../../consensus/committee.js'
import type { ConsensusSigner, Ledger } from '../../consensus/ports.js'
import type { ArbiterItem, ArbitersResult } from '../../api/contract/operator-results.js'
import { TokenType } from '../../tokenchain/types.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import type { ArbiterCommittee } from './arbiter-committee.js'

/**
 * The operator's side of the arbiter committee: what this node counts, and a seat taken or given
 * up by a quorum DID of this node (docs/protocol.md, "The arbiter committee").
 */
export interface ArbiterSeatDeps {
  committee: () => ArbiterCommittee | undefined
  /** the quorum signer of a DID set up as a quorum on this node */
  quorumSigner: (did: string) => ConsensusSigner | undefined
  ledger: () => Ledger
  /** this node's peer id (undefined before the network is up) */
  selfPeer: () => string | undefined
}

const running = (d: ArbiterSeatDeps): ArbiterCommittee => {
  const c = d.committee()
  if (c === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'the arbiter committee is not loaded yet: the node\'s network is starting')
  return c
}

const item = (v: ReturnType<ArbiterCommittee['view']>[number]): ArbiterItem => ({
  did: v.did, peer: v.peer, state: v.state, registered_at: new Date(v.at).toISOString(), stake: v.stake.map((s) => ({ token: s.token, block: s.block })), ...(v.why !== undefined ? { why: v.why } : {})
})

export function arbitersResult (d: ArbiterSeatDeps): ArbitersResult {
  const c = running(d)
  const seats = c.members().length
  const charter = c.charterView()
  return { in_force: c.seats() !== undefined, seats, minimum: COMMITTEE_MIN, ...(charter !== undefined ? { charter: { dids: charter.dids, in_force_from: new Date(charter.countsFrom).toISOString() } } : {}), registrations: c.view().map(item) }
}

/** Registers `did` (a quorum of this node) as an arbiter with a stake of its Free whole RBT, or ends its seat. */
export async function registerSeat (d: ArbiterSeatDeps, did: string, leave: boolean): Promise<ArbiterItem> {
  const c = running(d)
  const signer = d.quorumSigner(did)
  if (signer === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `${did} is not set up as a quorum on this node: an arbiter seat is a quorum's (setupquorum first)`)
  const self = d.selfPeer()
  const standing = c.view().filter((v) => v.did === did && v.peer === self && (v.state === 'seated' || v.state === 'maturing')).pop()
  if (leave) {
    if (standing === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `${did} holds no arbiter seat registered by this node`)
    const reg = await c.register(signer, [], { chains: {}, contents: {} }, true)
    return item({ did: reg.did, peer: reg.peer, at: reg.at, state: 'left', stake: [] })
  }
  const ledger = d.ledger()
  // the stake: the tokens of the seat it holds when they have not moved, else Free whole RBT
  let stake: StakedToken[] = []
  if (standing !== undefined) {
    const now = await ledger.tokensById(standing.stake.map((s) => s.token), { content: false })
    if (now.every((t, i) => t !== undefined && t.owner === did && t.latestBlockId === standing.stake[i]!.block)) stake = standing.stake
  }
  if (stake.length === 0) {
    const free = (await ledger.tokensOf(did, 'Free', 'rbt')).filter((t) => (t.tokenType === TokenType.RBT || t.tokenType === TokenType.TEST_RBT) && t.valueMilli === 1000)
    if (free.length < ARBITER_STAKE_RBT) throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `an arbiter seat stakes ${ARBITER_STAKE_RBT} whole RBT: ${did} holds ${free.length} Free whole RBT`)
    stake = free.slice(0, ARBITER_STAKE_RBT).map((t) => ({ token: t.tokenId, block: t.latestBlockId }))
  }
  const bundle = await buildBundle(ledger, stake.map((s) => s.token), { levels: 0 })
  const reg = await c.register(signer, stake, bundle)
  return item({ did: reg.did, peer: reg.peer, at: reg.at, state: 'maturing', stake: reg.stake })
}
