import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { RbtClient } from '../../../src/client/rbt-client.js'
import { parseBlockId } from '../../../src/tokenchain/block.js'
import { tokenStateHash } from '../../../src/tokenchain/token-id.js'
import { GENESIS_ANCHOR } from '../../../src/tokenchain/validate.js'
import { USER_PASSWORD, createLiteDid, mintRbt, rbtBalance, transfer } from '../quorum-network.js'
import { raceNetwork, raceSpends, receiversRbt, restoredWallet, spend, type RaceNetwork, type SpendOutcome } from '../race-network.js'
import { waitFor } from '../wait.js'
import { NodeProcess } from '../node-process.js'
import { COMMITTEE_ENV, seatQuorums } from '../committee.js'
import { AttackerPeer, dialStats, grindPeerKeys } from './attacker-peer.js'
import { appendOwnerOnlyBlock } from './owner-fork.js'

/**
 * The cheating owner's attacks (issue "one spend per token against an owner who cheats";
 * docs/security.md, "Threat model"), each scripted on a real local network: the race network
 * (test/helpers/race-network.ts: two disjoint quorum sets of five, the owner's nodes X and Y, a
 * fullnode, the receivers' nodes), plus the owner's own peers (AttackerPeer), which speak the
 * nodes' rpc from this process. Each attack answers how many of its tries paid twice (read from
 * the receivers' balances) and how the honest transfers made meanwhile fared.
 */
export interface AttackNet {
  net: RaceNetwork
  /** the owner's own peer, connected to every node: an arbiter of every state that grants everything */
  attacker: AttackerPeer
  /** every node's peer id */
  nodes: string[]
  /** honest traffic: a DID on the fullnode's node paying `dave` on R2, and a victim DID for pinning */
  payer: string
  dave: string
  victim: string
  /** double spends paid so far, by attack (for `undetected`) */
  paidTwice: Array<{ attack: string, did: string, states: string[], x?: string, y?: string }>
  /** with `requireCommittee`: what the payer's transfer was told before any seat stood */
  beforeSeats?: { status: boolean, message: string }
  close: () => Promise<void>
}

export interface AttackResult {
  name: string
  tries: number
  paidTwice: number
  /** honest transfers made during the attack: how many, how many succeeded (and the successes' times, ms) */
  honest: { made: number, ok: number, ms?: number[] }
  notes: string[]
}

export async function attackNetwork (o: { log?: (s: string) => void, honestRbt?: number, committee?: boolean, requireCommittee?: boolean } = {}): Promise<AttackNet> {
  const log = o.log ?? (() => {})
  // no partitions here: a peer gone for 5 s is no arbiter any more (the attacks add and remove peers);
  // `requireCommittee`: every node counts only seats, and refuses transfers until they stand
  const committeeEnv = o.committee === true ? { ...COMMITTEE_ENV, ...(o.requireCommittee === true ? { RBTNODE_REQUIRE_COMMITTEE: '1' } : {}) } : {}
  const opts = { lan: false, quorumRbt: 60, env: { RBTNODE_ARBITER_FORGET_MS: '5000', ...committeeEnv }, log, setupTimeoutMs: 600_000 }
  // a set-up step that fails on a loaded machine (fifteen nodes start at once) is tried once more
  const net = await raceNetwork(opts).catch(async (e: Error) => { log(`network set-up failed (${e.message.slice(0, 160)}); once more`); return await raceNetwork(opts) })
  try {
    const payer = await createLiteDid(net.full.client, USER_PASSWORD)
    const victim = await createLiteDid(net.full.client, USER_PASSWORD)
    const dave = await createLiteDid(net.r2.client, USER_PASSWORD)
    await mintRbt(net.full.client, payer, o.honestRbt ?? 40, 0, USER_PASSWORD)
    await mintRbt(net.full.client, victim, 6, 0, USER_PASSWORD)
    // every node resolves dave to R2, and the payer to the fullnode (dave pays back)
    await Promise.all(net.all().filter((n) => n !== net.r2).map(async (n) => { await n.client.call('nodeAddPeers', { body: { DID: dave, PeerID: net.r2.peerId, DIDType: 4 } }) }))
    await Promise.all(net.all().filter((n) => n !== net.full).map(async (n) => { await n.client.call('nodeAddPeers', { body: { DID: payer, PeerID: net.full.peerId, DIDType: 4 } }) }))
    // nodes that require the committee pay nothing before it stands
    const beforeSeats = o.requireCommittee === true ? await transfer(net.full.client, payer, dave, 1, USER_PASSWORD, 'before any seat') : undefined
    if (beforeSeats !== undefined) log(`a transfer before any seat: ${beforeSeats.status ? 'paid' : beforeSeats.message}`)
    // with a committee: every quorum DID takes an arbiter seat, and peer ids count for nothing
    if (o.committee === true) {
      await seatQuorums(net.quorums, net.quorumDids, net.all())
      log(`arbiter committee in force on every node: ${net.quorums.length} seats`)
    }
    const attacker = await AttackerPeer.start({ behaviour: 'grant' })
    const nodes = await attacker.connect(net.all().map((n) => n.multiaddr))
    log(`attacker peer ${attacker.peerId} connected to ${nodes.length} nodes; honest payer funded`)
    return {
      net, attacker, nodes, payer, dave, victim, paidTwice: [],
      ...(beforeSeats !== undefined ? { beforeSeats: { status: beforeSeats.status, message: beforeSeats.message ?? '' } } : {}),
      close: async () => { await attacker.stop(); await net.close() }
    }
  } catch (e) {
    await net.close()
    throw e
  }
}

/** How long the owner's peers of one attack keep trying to join the nodes before attacking with the links they have. */
const JOIN_MS = 120_000

/** How long a peer gone stays an arbiter in the nodes' views here (RBTNODE_ARBITER_FORGET_MS of attackNetwork), and a second more. */
const FORGOTTEN_MS = 6000

interface Listed { token_id: string, token_status: string, latest_block_id: string }

/**
 * The state hashes of `did`'s Free RBT as `client`'s node lists them, as claims, markers and
 * arbiters key them: the token id at its latest block, or at GENESIS_ANCHOR for a token still at
 * its genesis (every genesis of a token is one state). Every wallet these attacks spend holds
 * tokens whose latest block a quorum signed or a genesis, never an owner-only tip.
 */
export async function freeStates (client: RbtClient, did: string): Promise<string[]> {
  const l = ((await client.call('tokensList', { query: { did, type: 'rbt' } })).result as unknown as Listed[] | null) ?? []
  return l.filter((t) => t.token_status === 'Free').map((t) => tokenStateHash(t.token_id, parseBlockId(t.latest_block_id).number === 0 ? GENESIS_ANCHOR : t.latest_block_id))
}

/**
 * Honest transfers of 1 RBT one after the other while `attack` runs, at least `min` of them: made
 * and succeeded. The payer pays dave and dave pays the payer back, in turn, so the traffic never
 * runs out of RBT however long the attack lasts (one way only, the payer's 40 RBT were spent
 * within the first attack and every later transfer failed for want of a free token). A failed
 * transfer is followed by a short pause, so failures are not counted faster than transfers.
 */
export async function withHonestTraffic<T> (an: AttackNet, attack: () => Promise<T>, o: { min?: number } = {}): Promise<{ value: T, honest: { made: number, ok: number, ms: number[] }, failures: string[] }> {
  let done = false
  let made = 0
  let ok = 0
  const ms: number[] = []
  const failures: string[] = []
  const traffic = (async () => {
    let back = false
    while (!done || made < (o.min ?? 2)) {
      const t0 = Date.now()
      const r = await (back
        ? transfer(an.net.r2.client, an.dave, an.payer, 1, USER_PASSWORD, 'honest back')
        : transfer(an.net.full.client, an.payer, an.dave, 1, USER_PASSWORD, 'honest')).catch((e: Error) => ({ status: false, message: e.message }))
      made++
      if (r.status) { ok++; ms.push(Date.now() - t0); back = !back } else {
        failures.push(r.message.slice(0, 160))
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
    }
  })()
  try {
    const value = await attack()
    return { value, honest: { made, ok, ms }, failures }
  } finally {
    done = true
    await traffic
  }
}

/** The receivers' RBT once what `won` spends of `amount` each paid has arrived (or 30 s passed): how many reached them since `before`. */
async function paidSince (net: RaceNetwork, before: number, won: number, amount = 1): Promise<number> {
  await waitFor(async () => await receiversRbt(net) >= before + amount * Math.max(won, 1) - 1e-9, { timeoutMs: won > 0 ? 30_000 : 3000, what: 'the payments to arrive' }).catch(() => {})
  return await receiversRbt(net) - before
}

function outcome (o: SpendOutcome): string { return o.status ? 'paid' : `refused (${o.message.slice(0, 200)})` }

/**
 * Case 1, evict then release: the owner's peer is an arbiter like any node and sees the checkers'
 * claims of the wallet's state; for every transaction it sees claim the state it claims that
 * transaction at every node under 16 quorum strings (so the honest claimant falls out of the last
 * 16) and releases it, over and over while the owner spends the token from X and from Y at once.
 */
export async function evictRelease (an: AttackNet, tries = 3, log: (s: string) => void = () => {}): Promise<AttackResult> {
  const { net, attacker } = an
  let paidTwice = 0
  const notes: string[] = []
  const run = await withHonestTraffic(an, async () => {
    for (let t = 0; t < tries; t++) {
      const w = await restoredWallet(net)
      const [state] = await freeStates(net.x.client, w.did)
      if (state === undefined) throw new Error('the wallet has no Free RBT on X')
      const txids = new Set<string>()
      const off = attacker.onClaim((c) => { if (c.stateHash === state) txids.add(c.txid) })
      let stop = false
      let freed = 0
      const evicting = (async () => {
        while (!stop) {
          for (const tx of [...txids]) freed += (await Promise.all(an.nodes.map(async (p) => await attacker.evict(p, tx, state)))).filter((n) => n > 0).length
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      })()
      const before = await receiversRbt(net)
      let x: SpendOutcome, y: SpendOutcome
      try {
        ({ x, y } = await raceSpends(net, w.did, { rbt: 1 }, 150))
      } finally { stop = true; await evicting; off() }
      const won = [x, y].filter((s) => s.status).length
      const paid = await paidSince(net, before, won)
      if (paid > 1) { paidTwice++; an.paidTwice.push({ attack: 'evict_release', did: w.did, states: [state], ...(x.txid !== undefined ? { x: x.txid } : {}), ...(y.txid !== undefined ? { y: y.txid } : {}) }) }
      const line = `try ${t + 1}: X ${outcome(x)}, Y ${outcome(y)}; ${txids.size} transaction(s) seen claiming, ${freed} evictions freed the state; receivers got ${paid}`
      notes.push(line)
      log(line)
    }
  })
  return { name: 'evict_release', tries, paidTwice, honest: run.honest, notes: [...notes, ...run.failures.slice(0, 2).map((f) => `honest failure: ${f}`)] }
}

/**
 * Case 2, the owner-only fork: the wallet on X and Y; Y is stopped and the owner appends to the
 * token's chain there a block he signs alone ("11" by default), then restarts Y. X pays the token
 * to bob from its state, then Y pays it to carol from the new tip: a state no quorum signed, which
 * no claim, marker or held state of X's spend names.
 */
export async function ownerOnlyFork (an: AttackNet, tries = 1, log: (s: string) => void = () => {}, type = '11'): Promise<AttackResult> {
  const { net } = an
  let paidTwice = 0
  const notes: string[] = []
  const run = await withHonestTraffic(an, async () => {
    for (let t = 0; t < tries; t++) {
      const w = await restoredWallet(net)
      const listed = ((await net.y.client.call('tokensList', { query: { did: w.did, type: 'rbt' } })).result as unknown as Listed[] | null) ?? []
      const token = listed.find((l) => l.token_status === 'Free')
      if (token === undefined) throw new Error('the wallet has no Free RBT on Y')
      await net.y.stop()
      let forked: string
      try {
        forked = await appendOwnerOnlyBlock(net.y, { tokenId: token.token_id, did: w.did, mnemonic: w.mnemonic, type })
      } finally {
        await net.y.start()
      }
      await waitFor(async () => {
        for (const did of net.set2) if (!(await net.y.client.envelope('quorumsStatus', { query: { quorumAddress: did } })).status) return false
        return true
      }, { timeoutMs: 180_000, intervalMs: 500, what: 'Y to reach its quorums again after its restart' })
      await an.attacker.connect([net.y.multiaddr], { deadlineMs: 60_000 }).catch(() => [])
      const before = await receiversRbt(net)
      const x = await spend(net.x.client, { initiator: w.did, owner: net.bob, tokens: { rbt: 1 }, memo: 'fork x' })
      const y = await spend(net.y.client, { initiator: w.did, owner: net.carol, tokens: { rbt: 1 }, memo: 'fork y' })
      const won = [x, y].filter((s) => s.status).length
      const paid = await paidSince(net, before, won)
      if (paid > 1) { paidTwice++; an.paidTwice.push({ attack: 'owner_only_fork', did: w.did, states: [], ...(x.txid !== undefined ? { x: x.txid } : {}), ...(y.txid !== undefined ? { y: y.txid } : {}) }) }
      const line = `try ${t + 1}: a "${type}" block ${forked.slice(0, 14)}… appended on Y; X ${outcome(x)}, then Y ${outcome(y)}; receivers got ${paid}`
      notes.push(line)
      log(line)
    }
  })
  return { name: 'owner_only_fork', tries, paidTwice, honest: run.honest, notes: [...notes, ...run.failures.slice(0, 2).map((f) => `honest failure: ${f}`)] }
}

/**
 * Case 5, Sybil arbiters: 20 peer ids (`sybils`) ground offline closer to the wallet's state's key
 * than every node, joined to the network as peers that grant every claim; then the owner spends
 * the token from X and from Y at once.
 */
export async function sybilArbiters (an: AttackNet, tries = 2, log: (s: string) => void = () => {}, o: { joinMs?: number, sybils?: number } = {}): Promise<AttackResult> {
  const { net } = an
  let paidTwice = 0
  const notes: string[] = []
  const run = await withHonestTraffic(an, async () => {
    for (let t = 0; t < tries; t++) {
      const w = await restoredWallet(net)
      const [state] = await freeStates(net.x.client, w.did)
      if (state === undefined) throw new Error('the wallet has no Free RBT on X')
      const t0 = Date.now()
      const { keys, tries: ground } = await grindPeerKeys(state, o.sybils ?? 20, [...an.nodes, an.attacker.peerId])
      const grindMs = Date.now() - t0
      const sybils = await Promise.all(keys.map(async (key) => await AttackerPeer.start({ key, behaviour: 'grant' })))
      let x: SpendOutcome | undefined, y: SpendOutcome | undefined
      let paid = 0
      try {
        // the sender claims (the owner's X and Y) and every signer counts the grants against its own
        // view: the Sybils join every node, the owner's own first
        const j0 = Date.now()
        const d0 = { ...dialStats }
        // a link not made in two minutes (a node too loaded to finish handshakes) is left out: the
        // note says how many of the links the attack had
        const links = await Promise.all(sybils.map(async (s) => await s.connectSome(net.all().map((q) => q.multiaddr), { deadlineMs: o.joinMs ?? JOIN_MS })))
        const made = links.reduce((n, l) => n + l.joined.length, 0)
        const joined = `${made} of ${sybils.length * net.all().length} links to the nodes made in ${Date.now() - j0} ms (${dialStats.made - d0.made} dials, ${dialStats.failed - d0.failed} reset or timed out)`
        const asked = new Set<string>()
        for (const s of sybils) s.onClaim((c) => { if (c.stateHash === state) asked.add(s.peerId) })
        const before = await receiversRbt(net)
        ;({ x, y } = await raceSpends(net, w.did, { rbt: 1 }, 50))
        const won = [x, y].filter((s) => s.status).length
        paid = await paidSince(net, before, won)
        const line = `try ${t + 1}: ${keys.length} ids ground in ${grindMs} ms (${ground} keys), ${joined}; ${asked.size} Sybils asked to grant; X ${outcome(x)}, Y ${outcome(y)}; receivers got ${paid}`
        notes.push(line)
        log(line)
      } finally {
        await Promise.all(sybils.map(async (s) => { await s.stop() }))
      }
      if (paid > 1) { paidTwice++; an.paidTwice.push({ attack: 'sybil_arbiters', did: w.did, states: [state], ...(x?.txid !== undefined ? { x: x.txid } : {}), ...(y?.txid !== undefined ? { y: y.txid } : {}) }) }
      // the Sybils are gone: they leave the nodes' arbiter views before the next try
      if (t + 1 < tries) await new Promise((resolve) => setTimeout(resolve, FORGOTTEN_MS))
    }
  })
  return { name: 'sybil_arbiters', tries, paidTwice, honest: run.honest, notes: [...notes, ...run.failures.slice(0, 2).map((f) => `honest failure: ${f}`)] }
}

/**
 * Case 6, hanging peers: 20 fresh peers join every node and accept every request without
 * answering (more than a third of the arbiters of most states), while honest transfers run for
 * `seconds`; then they leave (and are forgotten before this answers).
 */
export async function hangingPeers (an: AttackNet, seconds = 20): Promise<{ honest: { made: number, ok: number }, note: string }> {
  const { net } = an
  const hangers = await Promise.all(Array.from({ length: 20 }, async () => await AttackerPeer.start({ behaviour: 'hang' })))
  let joined = ''
  const hang = await withHonestTraffic(an, async () => {
    const j0 = Date.now()
    const links = await Promise.all(hangers.map(async (h) => await h.connectSome(net.all().map((n) => n.multiaddr), { deadlineMs: JOIN_MS })))
    joined = `${links.reduce((n, l) => n + l.joined.length, 0)} of ${hangers.length * net.all().length} links made in ${Date.now() - j0} ms`
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
  }, { min: 3 })
  await Promise.all(hangers.map(async (h) => { await h.stop() }))
  await new Promise((resolve) => setTimeout(resolve, FORGOTTEN_MS))
  return { honest: hang.honest, note: `hanging peers (${joined}): ${hang.honest.ok} of ${hang.honest.made} honest transfers went through${hang.failures[0] !== undefined ? ` (${hang.failures[0]})` : ''}` }
}

/**
 * Case 6, stranger claims: the owner's peer claims the states of the victim's Free tokens at every
 * node for a made-up transaction; then the victim pays twice (and honest traffic runs).
 */
export async function strangerClaims (an: AttackNet): Promise<{ honest: { made: number, ok: number }, victimOk: number, pinned: number, note: string }> {
  const { net, attacker } = an
  const states = await freeStates(net.full.client, an.victim)
  const pinned = (await Promise.all(an.nodes.map(async (p) => await attacker.pin(p, states)))).reduce((s, n) => s + n, 0)
  const pin = await withHonestTraffic(an, async () => {
    const out: Array<{ status: boolean, message: string }> = []
    for (let i = 0; i < 2; i++) out.push(await transfer(net.full.client, an.victim, an.dave, 1, USER_PASSWORD, 'victim').catch((e: Error) => ({ status: false, message: e.message })))
    return out
  }, { min: 2 })
  const victimOk = pin.value.filter((v) => v.status).length
  const refused = pin.value.find((v) => !v.status)
  const note = `stranger claims: ${pinned} grants pinned ${states.length} states of the victim at ${an.nodes.length} nodes; the victim's transfers: ${victimOk} of 2 went through${refused !== undefined ? ` (${refused.message.slice(0, 120)})` : ''}`
  return { honest: { made: pin.honest.made + 2, ok: pin.honest.ok + victimOk }, victimOk, pinned, note }
}

/**
 * Case 6, denial of service: hanging peers, then stranger claims. Nothing is double spent here;
 * the figure is honest_ok.
 */
export async function denialOfService (an: AttackNet, o: { hangSeconds?: number } = {}, log: (s: string) => void = () => {}): Promise<AttackResult> {
  const hang = await hangingPeers(an, o.hangSeconds ?? 20)
  log(hang.note)
  const pin = await strangerClaims(an)
  log(pin.note)
  const honest = { made: hang.honest.made + pin.honest.made, ok: hang.honest.ok + pin.honest.ok }
  return { name: 'dos', tries: 2, paidTwice: 0, honest, notes: [hang.note, pin.note] }
}

/** The cheating owner's node (test/helpers/attacker/cheating-node.ts): rbtnode's code with the sender's steps changed. */
const CHEATING_NODE = fileURLToPath(new URL('./cheating-node.js', import.meta.url))

/**
 * Y run as the owner's changed node (`cheats`, see cheating-node.ts) while `f` runs: Y is stopped
 * and the cheating node started on its data dir, ports and peer id; afterwards Y runs rbtnode
 * again. `own({ did, mnemonic })` tells the cheating node the wallet whose key it signs with (a
 * file in Y's data dir, removed afterwards).
 */
async function withCheatingY<T> (an: AttackNet, cheats: string[], f: (own: (w: { did: string, mnemonic: string }) => void) => Promise<T>): Promise<T> {
  const { net } = an
  const honest = net.y
  const cheat = new NodeProcess({ ...honest.opts, dir: honest.dir, apiPort: honest.apiPort, swarmPort: honest.swarmPort, entry: CHEATING_NODE, env: { ...honest.opts.env, RBTNODE_CHEAT: cheats.join(',') } })
  const reach = async (y: NodeProcess): Promise<void> => {
    await waitFor(async () => {
      for (const did of net.set2) if (!(await y.client.envelope('quorumsStatus', { query: { quorumAddress: did } })).status) return false
      return true
    }, { timeoutMs: 180_000, intervalMs: 500, what: 'Y to reach its quorums again after its restart' })
    await an.attacker.connect([y.multiaddr], { deadlineMs: 60_000 }).catch(() => [])
  }
  await honest.stop()
  try {
    await cheat.start()
    net.y = cheat
    await reach(cheat)
    return await f((w) => { writeFileSync(join(honest.dir, 'cheat.json'), JSON.stringify(w)) })
  } finally {
    net.y = honest
    await cheat.stop().catch(() => null)
    rmSync(join(honest.dir, 'cheat.json'), { force: true })
    await honest.start()
    await reach(honest)
  }
}

/**
 * Case 3, the ghost credit: Y runs the owner's changed node, whose blocks carry a credit more (the
 * owner's own DID signing the transaction id, and the block once the quorums signed it): a credit
 * signer that is no quorum. The owner spends the token from X and from Y at once.
 */
export async function ghostCredit (an: AttackNet, tries = 2, log: (s: string) => void = () => {}): Promise<AttackResult> {
  return await cheatingRace(an, 'ghost_credit', tries, 1, log)
}

/**
 * Case 4, burnt ancestors claimed at SIGN: Y runs the owner's changed node, whose PREPAREs do not
 * say who else votes (no quorum claims before SIGN). The owner splits one whole token two ways,
 * half to bob from X and half to carol from Y: two parts of one burnt parent; at once, and every
 * second try Y first (its claims made at SIGN alone), then X.
 */
export async function signBurns (an: AttackNet, tries = 2, log: (s: string) => void = () => {}): Promise<AttackResult> {
  return await cheatingRace(an, 'sign_burns', tries, 0.5, log, (t) => t % 2 === 1)
}

async function cheatingRace (an: AttackNet, name: string, tries: number, amount: number, log: (s: string) => void, yFirst: (t: number) => boolean = () => false): Promise<AttackResult> {
  const { net } = an
  let paidTwice = 0
  const notes: string[] = []
  const run = await withHonestTraffic(an, async () => {
    await withCheatingY(an, [name], async (own) => {
      for (let t = 0; t < tries; t++) {
        const w = await restoredWallet(net)
        own(w)
        const before = await receiversRbt(net)
        // Y's spend first and whole where `yFirst` says (sign_burns: its quorums claim only at
        // SIGN), then X's, whose claim must meet Y's (at the burnt parent)
        const { x, y } = yFirst(t)
          ? await (async () => {
            const y = await spend(net.y.client, { initiator: w.did, owner: net.carol, tokens: { rbt: amount }, memo: 'cheat y' })
            return { y, x: await spend(net.x.client, { initiator: w.did, owner: net.bob, tokens: { rbt: amount }, memo: 'then x' }) }
          })()
          : await raceSpends(net, w.did, { rbt: amount }, 50)
        const won = [x, y].filter((s) => s.status).length
        const paid = await paidSince(net, before, won, amount)
        if (paid > amount + 1e-9) { paidTwice++; an.paidTwice.push({ attack: name, did: w.did, states: [], ...(x.txid !== undefined ? { x: x.txid } : {}), ...(y.txid !== undefined ? { y: y.txid } : {}) }) }
        const line = `try ${t + 1}${yFirst(t) ? ' (Y first, then X)' : ' (at once)'}: ${amount} RBT from X ${outcome(x)}, from Y (changed: ${name}) ${outcome(y)}; receivers got ${paid}`
        notes.push(line)
        log(line)
      }
    })
  })
  return { name, tries, paidTwice, honest: run.honest, notes: [...notes, ...run.failures.slice(0, 2).map((f) => `honest failure: ${f}`)] }
}

/** Lines of a node's /metrics text whose name speaks of a double spend or a conflict, with a value above 0. */
async function flags (url: string): Promise<string[]> {
  const res = await fetch(`${url}/metrics`).catch(() => undefined)
  if (res === undefined || !res.ok) return []
  const text = await res.text()
  return text.split('\n').filter((l) => !l.startsWith('#') && /double_spen|conflict|equivocat/i.test(l) && Number(l.trim().split(/\s+/).pop()) > 0)
}

/**
 * Case 7, nothing notices: for every double spend the other attacks got paid, whether any honest
 * node (quorums, fullnode, receivers) flags it afterwards (a metric of double spends or
 * conflicting spends above 0). Counts the double spends no honest node flagged.
 */
export async function undetected (an: AttackNet, log: (s: string) => void = () => {}): Promise<AttackResult> {
  const { net } = an
  const honestNodes = [...net.quorums, net.full, net.r1, net.r2]
  let flagged: string[] = []
  if (an.paidTwice.length > 0) {
    // time for the markers and announcements to spread
    await waitFor(async () => {
      flagged = (await Promise.all(honestNodes.map(async (n) => (await flags(n.url)).map((l) => `${n.peerId.slice(-6)}: ${l}`)))).flat()
      return flagged.length > 0
    }, { timeoutMs: 20_000, intervalMs: 1000, what: 'a node to flag the double spend' }).catch(() => {})
  }
  const missed = flagged.length > 0 ? 0 : an.paidTwice.length
  const notes = [`${an.paidTwice.length} double spend(s) paid by the other attacks; flags on honest nodes: ${flagged.length > 0 ? flagged.slice(0, 3).join(' | ') : 'none'}`]
  log(notes[0]!)
  return { name: 'undetected', tries: an.paidTwice.length, paidTwice: missed, honest: { made: 0, ok: 0 }, notes }
}

export { rbtBalance }
