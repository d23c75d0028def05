import type { ConsensusTransport, DeliverRequest } from '../../../src/consensus/messages.js'
import type { StateClaims } from '../../../src/consensus/ports.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import { expect } from 'chai'
import type { SimDid, SimNet, SimNode } from './harness.js'

/** What the owner's sender hands its seal: the arguments of `sealFor`. */
export type SealArgs = Parameters<NonNullable<StateClaims['sealFor']>>

/**
 * The owner's sender on `node` running changed code: it seals nothing and delivers nothing, and
 * keeps both (the seal's arguments, the delivery) for the owner to use later; `realSeal` is the
 * node's own seal, to seal them late.
 */
export function holdSealAndDelivery (node: SimNode): { delivery: () => DeliverRequest | undefined, seal: () => SealArgs | undefined, realSeal: NonNullable<StateClaims['sealFor']> } {
  const tx = node.sender as unknown as { transport: ConsensusTransport, ctx: { claims: { port: StateClaims } } }
  const base = tx.transport
  let delivery: DeliverRequest | undefined
  tx.transport = { ...base, deliver: async (r) => { delivery = structuredClone(r); throw new RbtError(ErrorCode.PEER_UNREACHABLE, 'held back by the owner') } }
  const port = tx.ctx.claims.port
  const realSeal = port.sealFor!
  let seal: SealArgs | undefined
  port.sealFor = async (...args) => { seal = args; return { granted: true, tallies: [], seals: [] } }
  return { delivery: () => delivery, seal: () => seal, realSeal }
}

/** Waits until no arbiter holds a claim of `txid` on `hashes` (its quorums released it). */
export async function releasedEverywhere (net: SimNet, txid: string, hashes: readonly string[]): Promise<void> {
  for (const deadline = Date.now() + 5000; ;) {
    const held = (await Promise.all(net.nodes.map(async (a) => await a.claims.records([...hashes])))).flat().some((r) => r?.txid === txid)
    if (!held) return
    if (Date.now() > deadline) throw new Error('the claims of the aborted transaction were not released')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** The owner's quorums (he holds their keys) release their claims of `txid` at every arbiter; resolves once all are free. */
export async function releaseOwnClaims (net: SimNet, quorums: readonly string[], txid: string, hashes: readonly string[]): Promise<void> {
  for (const a of net.nodes) {
    for (const q of quorums) {
      for (const r of await a.claims.records([...hashes])) for (const c of r?.claimants ?? []) if (c.quorum === q && c.nonce !== undefined) await a.claims.release(txid, hashes, q, c.nonce)
    }
  }
  await releasedEverywhere(net, txid, hashes)
}

/**
 * After the owner's five signed T1 (held back by holdSealAndDelivery): his quorums release their
 * claims of it at every arbiter, freeing the state; T1's delivery and seal are kept for later.
 */
export async function releasedAfterSigning (net: SimNet, quorums: readonly string[], owner: ReturnType<typeof holdSealAndDelivery>): Promise<{ t1: DeliverRequest, held: SealArgs }> {
  const t1 = owner.delivery()
  const held = owner.seal()
  if (t1 === undefined) throw new Error('T1 was not signed')
  if (held === undefined) throw new Error('T1 was never to be sealed')
  await releaseOwnClaims(net, quorums, t1.txid, [...new Set(held[1].map((it) => it.stateHash))])
  return { t1, held }
}

/**
 * The owner's second spend of alice's token (already paid elsewhere) to a DID of his own on his
 * node M: his quorums (set2) sign it without any claim and look no spent marker up, his sender on Y
 * claims nothing, and M's receiver checks no certificate. Everyone is honest again afterwards.
 */
export async function launderToOwnNode (n: { net: SimNet, y: SimNode, set2: readonly string[] }, alice: SimDid): Promise<{ m: SimNode, mallory: SimDid }> {
  const m = n.net.addNode('M')
  const mallory = await n.net.addDid(m)
  ;(m.receiver as unknown as { checkCertificate: () => Promise<unknown[]> }).checkCertificate = async () => []
  for (const d of n.set2) n.net.nodeOf(d).signsAnything = true
  n.y.claimsNothing = true
  const markers = n.net.markers
  n.net.markers = new Map()
  const second = await n.y.sender.transfer({ sender: alice.did, receiver: mallory.did, amountMilli: 1000, memo: 'y', quorums: [...n.set2] }, alice.owner)
  n.net.markers = markers
  expect(second.delivered, 'the owner\'s own receiver took the second spend').to.equal(true)
  for (const d of n.set2) n.net.nodeOf(d).signsAnything = false
  n.y.claimsNothing = false
  return { m, mallory }
}

/** A fresh wallet with one token, on X and (restored) on Y: one owner's two nodes. */
export async function walletOnTwoNodes (net: SimNet, x: SimNode, y: SimNode): Promise<{ alice: SimDid, id: string }> {
  const alice = await net.addDid(x)
  y.dids.set(alice.did, alice)
  const [id] = await net.mint(x, alice.did, 1)
  y.ledger.tokens.set(id, { ...x.ledger.tokens.get(id)! })
  y.ledger.blocks.set(id, [...x.ledger.blocks.get(id)!])
  return { alice, id }
}
