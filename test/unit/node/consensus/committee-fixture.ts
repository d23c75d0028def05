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
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { nonceOfSecret, type PeerSeal } from '../../../../src/consensus/claim-proofs.js'

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
export function claimsAt (peerId: string, o: { sign?: (d: Uint8Array) => Promise<Uint8Array>, rpc?: RpcClient<never>, committee?: () => string[] | undefined, view?: string[], timeoutMs?: number, requireCommittee?: boolean, sealHedgeMs?: number } = {}): ReturnType<typeof nodeStateClaims> {
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
    ...(o.sealHedgeMs !== undefined ? { sealHedgeMs: o.sealHedgeMs } : {}),
    ...(o.committee !== undefined ? { committee: o.committee } : {}),
    ...(o.requireCommittee !== undefined ? { requireCommittee: o.requireCommittee } : {})
  })
}

/** `n` seats, each a node's claims with its own peer key, all counting the same committee. */
export async function seatsOf (n: number): Promise<Array<{ peer: string, sign: (d: Uint8Array) => Promise<Uint8Array>, claims: ReturnType<typeof claimsAt> }>> {
  const keys = await Promise.all(Array.from({ length: n }, async () => await peerKey()))
  const committee = (): string[] => keys.map((k) => k.peer)
  return keys.map((k) => ({ ...k, claims: claimsAt(k.peer, { sign: k.sign, committee }) }))
}

type Seat = Awaited<ReturnType<typeof seatsOf>>[number]

/** The five signers' quorums of the certificate tests. */
export const SIGNER_QUORUMS = ['bafybmiqa', 'bafybmiqb', 'bafybmiqc', 'bafybmiqd', 'bafybmiqe']

/**
 * `state` claimed and sealed to `txid` at the seats numbered `at`, one quorum per seat (`quorums`,
 * or one made-up quorum for all): the seals they signed, a certificate when they are q(n).
 */
export async function sealedAt (seats: readonly Seat[], at: readonly number[], state: string, txid: string, quorums?: readonly string[]): Promise<PeerSeal[]> {
  const items = [{ stateHash: state, holder: txid }]
  const seals: PeerSeal[] = []
  for (const [k, i] of at.entries()) {
    const q = quorums?.[k] ?? 'bafybmiqz'
    const nonce = nonceOfSecret((quorums !== undefined ? 0xe0 + k : 0xf0 + i).toString(16).padStart(32, '0'))
    await seats[i]!.claims.grantOwn!(txid, { quorum: q, nonce, sig: 'ab' }, [state], [])
    seals.push(...await seats[i]!.claims.sealSigned!(txid, q, nonce, items))
  }
  return seals
}

/**
 * Seven seats (f = 2, q(7) = 5) and a state of the owner paid to bob in T1, decided on the five
 * signers' own seals (seats 0..4; the tests make 3 and 4 the owner's, or 4 alone), seats 5 and 6
 * never asked; bob's receiver has accepted T1's certificate (throws otherwise).
 */
export async function paidToBob (label: string): Promise<{ seats: Seat[], state: string, t1: string, committee: () => string[], certificate: PeerSeal[] }> {
  const seats = await seatsOf(7)
  const state = sha3Hex(`a state of the owner: ${label}`)
  const t1 = sha3Hex(`the spend bob accepted: ${label}`)
  const certificate = await sealedAt(seats, [0, 1, 2, 3, 4], state, t1, SIGNER_QUORUMS)
  const committee = (): string[] => seats.map((s) => s.peer)
  const bob = claimsAt((await peerKey()).peer, { committee })
  if (!(await bob.checkSeals!([{ stateHash: state, holder: t1 }], certificate)).granted) throw new Error('bob\'s receiver refused T1\'s certificate')
  return { seats, state, t1, committee, certificate }
}

/**
 * A client of the seats' `claims.seal`, as a later receiver reaches them: `lie(peer)` answers for
 * the seats that say what they like (an answer per item, or throws for a cut link), undefined lets
 * the seat answer itself.
 */
export function sealRpc (seats: readonly Seat[], lie: (peer: string) => (() => unknown) | undefined = () => undefined): RpcClient<never> {
  return {
    call: async (peer: string, method: string, req: { items: unknown[] }) => {
      if (method !== 'claims.seal') throw new Error(`${method} not served`)
      const said = lie(peer)
      if (said !== undefined) return { answers: req.items.map(() => said()) }
      return await seats.find((s) => s.peer === peer)!.claims.serveSeal!(req as never, 'receiver-peer')
    }
  } as unknown as RpcClient<never>
}

export const MiB = 1024 * 1024
/** The size of `x` as it crosses the wire: JSON, in UTF-8 bytes. */
export const wireBytes = (x: unknown): number => Buffer.byteLength(JSON.stringify(x), 'utf8')

export const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
export const B32 = 'abcdefghijklmnopqrstuvwxyz234567'

/** `n` characters of `alphabet` drawn from `seed` (ids of the right shape, no key behind them). */
export const pick = (alphabet: string, seed: string, n: number): string => {
  let out = ''
  let h = sha3Hex(seed)
  while (out.length < n) {
    for (let i = 0; i + 2 <= h.length && out.length < n; i += 2) out += alphabet[Number.parseInt(h.slice(i, i + 2), 16) % alphabet.length]!
    h = sha3Hex(h)
  }
  return out
}

/**
 * A registration of the right shape drawn from `seed`, whose signatures are junk (nothing about it
 * verifies), staking one token; with `chainHexChars`, that token's chain is one block of that many
 * hex characters (no chain otherwise).
 */
export const junkReg = (seed: string, at = 1_000_000_000, chainHexChars?: number): WireRegistration => {
  const token = `Qm${pick(B58, `token${seed}`, 44)}`
  return {
    reg: {
      v: 1,
      did: `bafybmi${pick(B32, `did${seed}`, 52)}`,
      peer: `12D3KooW${pick(B58, `peer${seed}`, 44)}`,
      stake: [{ token, block: `1-${sha3Hex(`block${seed}`)}` }],
      at,
      sig: 'ab'.repeat(32),
      peerSig: 'cd'.repeat(32)
    },
    chains: chainHexChars === undefined ? {} : { [token]: ['ab'.repeat(chainHexChars / 2)] },
    contents: {}
  }
}
