import '../src/util/polyfill.js'
import { attackNetwork, denialOfService, evictRelease, ghostCredit, ownerOnlyFork, signBurns, sybilArbiters, undetected, type AttackResult } from '../test/helpers/attacker/attacks.js'
import { isMain, percentile } from './stats.js'

/**
 * The cheating owner (docs/security.md, "Threat model"): one scripted attack per case of the
 * threat model on a real local network, the race network (test/helpers/race-network.ts: ten
 * quorum nodes in two disjoint sets of five, the owner's nodes X and Y, a fullnode, the receivers'
 * nodes; 127.0.0.1, discovery off) plus the owner's own peers, run from this process with the
 * project's p2p modules (test/helpers/attacker/). Honest transfers (a DID on the fullnode's node
 * paying a DID on R2, which pays it back in turn) run during each attack.
 *
 * Figures, per attack: attack_<name>_paid_twice (tries that paid both receivers; goal 0),
 * attack_<name>_honest_ok (percent of the honest transfers made during the attack that went
 * through; goal ≥ 95 %), attack_<name>_tries. ATTACK_TRIES (default 3) sets the tries of the
 * attacks that race; ATTACK_ONLY (comma-separated names) runs some of them. Every quorum takes an
 * arbiter seat first (docs/protocol.md, "The arbiter committee"), the nodes requiring it
 * (`require_committee`: attack_before_seats says what a transfer before the seats was told;
 * ATTACK_REQUIRE_COMMITTEE=0 leaves it off); ATTACK_COMMITTEE=0 leaves the arbiters counted as
 * peers, the network before any seat.
 *
 * ghost_credit and sign_burns run the owner's node Y as changed code (test/helpers/attacker/
 * cheating-node.ts: rbtnode's sender with a step changed) for their tries.
 */
export async function run (): Promise<Record<string, string | number>> {
  const tries = Number(process.env.ATTACK_TRIES ?? 3)
  const only = (process.env.ATTACK_ONLY ?? '').split(',').filter((s) => s !== '')
  const want = (name: string): boolean => only.length === 0 || only.includes(name)
  const say = (s: string): void => { process.stdout.write(`  [attack] ${s}\n`) }
  // the network as the design runs it: every quorum seated on the arbiter committee (ATTACK_COMMITTEE=0:
  // arbiters counted as peers, as a network with no seats does)
  const committee = process.env.ATTACK_COMMITTEE !== '0'
  // the nodes count only seats (require_committee) unless ATTACK_REQUIRE_COMMITTEE=0: a transfer
  // before the seats stand is refused, and the figure says so
  const requireCommittee = committee && process.env.ATTACK_REQUIRE_COMMITTEE !== '0'
  const an = await attackNetwork({ log: say, committee, requireCommittee })
  const results: AttackResult[] = []
  try {
    if (want('evict_release')) results.push(await evictRelease(an, tries, say))
    if (want('owner_only_fork')) results.push(await ownerOnlyFork(an, 1, say))
    if (want('ghost_credit')) results.push(await ghostCredit(an, Math.max(1, Math.min(tries, 2)), say))
    if (want('sign_burns')) results.push(await signBurns(an, Math.max(1, Math.min(tries, 2)), say))
    if (want('sybil_arbiters')) results.push(await sybilArbiters(an, Math.max(1, Math.min(tries, 2)), say))
    if (want('dos')) results.push(await denialOfService(an, {}, say))
    if (want('undetected')) results.push(await undetected(an, say))
  } finally {
    await an.close()
  }
  const figures: Record<string, string | number> = { attack_arbiters: committee ? `the committee (${an.net.quorums.length} seats)` : 'peers (no committee)' }
  if (an.beforeSeats !== undefined) figures.attack_before_seats = an.beforeSeats.status ? 'paid (the node did not wait for the committee)' : `refused: ${an.beforeSeats.message}`
  for (const r of results) {
    figures[`attack_${r.name}_tries`] = r.tries
    figures[`attack_${r.name}_paid_twice`] = r.paidTwice
    figures[`attack_${r.name}_honest_ok`] = r.honest.made > 0 ? `${(100 * r.honest.ok / r.honest.made).toFixed(0)} % (${r.honest.ok} of ${r.honest.made})` : '-'
    if ((r.honest.ms ?? []).length > 0) figures[`attack_${r.name}_honest_p50_ms`] = percentile(r.honest.ms!, 50).toFixed(0)
    r.notes.forEach((n, i) => { figures[`attack_${r.name}_note${i + 1}`] = n })
  }
  return figures
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k} ${String(v)}\n`)
  process.exit(0)
}
