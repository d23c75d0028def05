import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { ArbiterCommittee, type ArbiterCommitteeOptions } from '../../../../src/node/consensus/arbiter-committee.js'
import type { WireRegistration } from '../../../../src/node/consensus/arbiter-wire.js'
import { peerSigner, verifyPeerSignature } from '../../../../src/p2p/peer-signature.js'
import { buildBundle } from '../../../../src/consensus/bundle.js'
import { didSignatureVerifier } from '../../../../src/tokens/verifier.js'
import { silentLogger } from '../../../../src/util/logger.js'
import { twoQuorumSets, type SimDid, type SimNet, type SimNode } from '../../consensus/harness.js'
import { memoryCollection } from '../../../helpers/memory-collection.js'
import { ClaimTable } from '../../../../src/consensus/claims.js'
import { nodeStateClaims } from '../../../../src/node/consensus/state-claims.js'
import type { ArbiterView } from '../../../../src/node/consensus/arbiter-view.js'
import type { NodeSpentMarkers } from '../../../../src/node/consensus/spent-markers.js'
import type { P2pHost } from '../../../../src/p2p/host.js'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { memoryClaimStore } from '../../consensus/harness.js'

/** Committees of real DID keys, chains and peer keys on a simulated network, for the committee's suites. */

export interface Ctx { net: SimNet, node: SimNode, did: SimDid, peer: string, sign: (d: Uint8Array) => Promise<Uint8Array> }

export const MATURITY = 10 * 60_000
export const GRACE = 2 * 60_000

export const committeeOf = (net: SimNet, o: { selfPeer?: string, sign?: (d: Uint8Array) => Promise<Uint8Array>, now?: () => number, addrs?: string[], maturityMs?: number, graceMs?: number, rpc?: RpcClient<never>, probe?: ArbiterCommitteeOptions['probe'], charterInlineBytes?: number, col?: ReturnType<typeof memoryCollection<any>> } = {}): ArbiterCommittee => new ArbiterCommittee({ // eslint-disable-line @typescript-eslint/no-explicit-any
  col: o.col ?? memoryCollection<any>(), // eslint-disable-line @typescript-eslint/no-explicit-any
  host: () => ({ peerId: o.selfPeer ?? 'self', signAsPeer: o.sign ?? (async () => new Uint8Array(64)), addrs: () => o.addrs ?? [], learn: async () => {}, connected: () => [] }),
  testNet: true,
  rpc: () => o.rpc as never,
  verifier: didSignatureVerifier({ resolve: async (did) => net.docs.get(did) }),
  verifyPeer: verifyPeerSignature,
  probe: o.probe ?? (async () => ({})),
  log: silentLogger,
  maturityMs: o.maturityMs ?? 0,
  graceMs: o.graceMs ?? 0,
  recheckMs: 0,
  pullMs: 0,
  ...(o.charterInlineBytes !== undefined ? { charterInlineBytes: o.charterInlineBytes } : {}),
  ...(o.now !== undefined ? { now: o.now } : {})
})

export async function peerKey (): Promise<{ peer: string, sign: (d: Uint8Array) => Promise<Uint8Array> }> {
  const key = await generateKeyPair('Ed25519')
  return { peer: peerIdFromPrivateKey(key).toString(), sign: peerSigner(key) }
}

/** Four seats registered at `clock()` (each its own DID, token and peer), and the fourth DID's own committee (to leave with). */
export async function fourSeats (clock: () => number): Promise<{ wires: WireRegistration[], last: { ctx: Ctx, own: ArbiterCommittee } }> {
  const n = await twoQuorumSets(false)
  const wires: WireRegistration[] = []
  let last: { ctx: Ctx, own: ArbiterCommittee } | undefined
  for (let i = 0; i < 4; i++) {
    const q = n.net.nodeOf(n.set1[i]!)
    const d = q.dids.get(n.set1[i]!)!
    const [t] = await n.net.mint(q, d.did, 1)
    const ctx: Ctx = { net: n.net, node: q, did: d, ...(await peerKey()) }
    const own = committeeOf(n.net, { selfPeer: ctx.peer, sign: ctx.sign, now: clock })
    const tok = (await q.ledger.tokensById([t!]))[0]!
    const reg = await own.register(d.quorum, [{ token: t!, block: tok.latestBlockId }], await buildBundle(q.ledger, [t!], { levels: 0 }))
    wires.push(own.list().find((w) => w.reg.at === reg.at && w.reg.did === reg.did)!)
    last = { ctx, own }
  }
  return { wires, last: last! }
}

/**
 * A node's claims as the committee suites build them: `peerId` signing with `sign`, calling peers
 * through `rpc`, counting `committee()` as the seats (undefined: none in force) and `view` as the
 * peers of its view; every proof taken as valid.
 */
export function claimsAt (peerId: string, o: { sign?: (d: Uint8Array) => Promise<Uint8Array>, rpc?: RpcClient<never>, committee?: () => string[] | undefined, view?: string[], timeoutMs?: number } = {}): ReturnType<typeof nodeStateClaims> {
  return nodeStateClaims({
    host: () => ({ peerId, signAsPeer: o.sign ?? (async () => new Uint8Array(64)), closestKnownPeers: () => [] }) as unknown as P2pHost,
    rpc: () => o.rpc as never,
    table: new ClaimTable(memoryClaimStore(), { now: () => Date.now() }),
    view: { closest: () => (o.view ?? []).map((p) => ({ peerId: p, multiaddrs: [] })) } as unknown as ArbiterView,
    markers: {} as unknown as NodeSpentMarkers,
    verifier: { verify: async () => true },
    quorumSigner: () => undefined,
    outcome: async () => 'pending',
    log: silentLogger,
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
    ...(o.committee !== undefined ? { committee: o.committee } : {})
  })
}
