import '../src/util/polyfill.js'
import { netnsAvailable } from '../test/helpers/netns.js'
import { raceNetwork, raceSpends, receiversRbt, restoredWallet, spend, type RaceNetwork } from '../test/helpers/race-network.js'
import { waitFor } from '../test/helpers/wait.js'
import { isMain, percentile } from './stats.js'

/**
 * An owner racing one wallet from two nodes (docs/protocol.md, "Claims"): ten quorum nodes in two
 * disjoint sets of five, node X listing one set and node Y the other, a fullnode, two receivers'
 * nodes (test/helpers/race-network.ts). Each race: a fresh wallet made from a mnemonic on X with
 * one test RBT, restored on Y by wallet sync from the fullnode; X pays it to bob and Y to carol at
 * once, Y a random 0-50 ms later. Paid twice is read from the receivers' balances, not from the
 * answers. Then the partition variant (root: every node in a namespace on one bridge): the network
 * cut between the two copies' sides before they race, in turn in halves (each copy with its
 * quorum set) and with X's side small (X and two of its quorums), then healed.
 *
 * RACE_RUNS (default 100) and RACE_PARTITION_RUNS (default 20) set the counts.
 * Figures: race_runs, race_paid_twice (goal 0), race_both_refused (goal ≤ 10 %), race_winner_p50_ms,
 * race_partition_runs, race_partition_paid_twice (goal 0), race_partition_signed (races of which a side signed),
 * race_heal_to_transfer_s (from a heal to the first transfer through, median).
 */
export async function run (): Promise<Record<string, string | number>> {
  const runs = Number(process.env.RACE_RUNS ?? 100)
  const partitionRuns = Number(process.env.RACE_PARTITION_RUNS ?? 20)
  const say = (s: string): void => { process.stdout.write(`  [race] ${s}\n`) }
  const lan = partitionRuns > 0 && await netnsAvailable()
  if (partitionRuns > 0 && !lan) say('no network namespaces here (root and iproute2 needed): the partition variant is skipped')
  const net = await raceNetwork({ lan, quorumRbt: 60, log: say })
  let paidTwice = 0
  let bothRefused = 0
  const winnerMs: number[] = []
  const refusals = new Map<string, number>()
  let pPaidTwice = 0
  let pSigned = 0
  let pRuns = 0
  const healS: number[] = []
  try {
    for (let i = 0; i < runs; i++) {
      const paid = await oneRace(net, Math.floor(Math.random() * 51))
      if (paid.paid > 1) paidTwice++
      if (paid.won === 0) bothRefused++
      winnerMs.push(...paid.winnerMs)
      for (const m of paid.refused) refusals.set(m, (refusals.get(m) ?? 0) + 1)
      if ((i + 1) % 10 === 0) say(`${i + 1} races: ${paidTwice} paid twice, ${bothRefused} both refused`)
    }
    for (let i = 0; lan && i < partitionRuns; i++) {
      // in turn: halves, each copy with its quorum set; X's side small (X and two of its quorums)
      const side = i % 2 === 0 ? undefined : [net.x, net.quorums[0]!, net.quorums[1]!]
      const w = await restoredWallet(net)
      const before = await receiversRbt(net)
      await net.partition(side)
      let won = 0
      try {
        const { x, y } = await raceSpends(net, w.did, { rbt: 1 }, Math.floor(Math.random() * 51))
        won = [x, y].filter((o) => o.status).length
        if (i < 2) say(`partition ${side === undefined ? 'in halves' : 'X small'}: X ${x.status ? 'signed' : `refused: ${x.message.slice(0, 140)}`}; Y ${y.status ? 'signed' : `refused: ${y.message.slice(0, 140)}`}`)
      } finally { await net.heal() }
      const healed = Date.now()
      pRuns++
      if (won > 0) pSigned++
      // what reached the receivers (a delivery held back by the cut arrives after the heal)
      await waitFor(async () => await receiversRbt(net) >= before + won, { timeoutMs: 60_000, what: 'the payment to arrive' }).catch(() => {})
      if (await receiversRbt(net) - before > 1) pPaidTwice++
      // after the heal: the first transfer through (a new wallet's, from X)
      const v = await restoredWallet(net)
      await waitFor(async () => (await spend(net.x.client, { initiator: v.did, owner: net.bob, tokens: { rbt: 1 }, memo: 'after heal' })).status, { timeoutMs: 120_000, intervalMs: 250, what: 'a transfer after the heal' })
      healS.push((Date.now() - healed) / 1000)
    }
  } finally {
    await net.close()
  }
  return {
    race_runs: runs,
    race_paid_twice: paidTwice,
    race_both_refused: `${bothRefused} (${runs > 0 ? (100 * bothRefused / runs).toFixed(0) : 0} %)`,
    race_winner_p50_ms: winnerMs.length > 0 ? percentile(winnerMs, 50).toFixed(0) : '-',
    race_winner_p99_ms: winnerMs.length > 0 ? percentile(winnerMs, 99).toFixed(0) : '-',
    race_refusals: [...refusals.entries()].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([m, k]) => `${k}× ${m}`).join(' | ') || '-',
    race_partition_runs: lan ? pRuns : 'skipped (no namespaces)',
    race_partition_paid_twice: lan ? pPaidTwice : '-',
    race_partition_signed: lan ? `${pSigned} of ${pRuns}` : '-',
    race_heal_to_transfer_s: healS.length > 0 ? `${percentile(healS, 50).toFixed(1)} (p50; includes a new wallet's mint and sync, about 1-2 s), max ${Math.max(...healS).toFixed(1)}` : '-'
  }
}

/** One race on a fresh wallet: how many spends answered success, how many RBT reached the receivers, the winners' times, the refusals' causes. */
async function oneRace (net: RaceNetwork, offsetMs: number): Promise<{ won: number, paid: number, winnerMs: number[], refused: string[] }> {
  const w = await restoredWallet(net)
  const before = await receiversRbt(net)
  const { x, y } = await raceSpends(net, w.did, { rbt: 1 }, offsetMs)
  const won = [x, y].filter((o) => o.status).length
  await waitFor(async () => await receiversRbt(net) >= before + won, { timeoutMs: 30_000, what: 'the payment to arrive' }).catch(() => {})
  // a moment more for a second delivery, were there one
  const paid = await receiversRbt(net) - before
  const cause = (m: string): string => /STATE_CLAIMED/.test(m) ? 'STATE_CLAIMED' : /CLAIM_UNREACHABLE/.test(m) ? 'CLAIM_UNREACHABLE' : /spent by|exhausted/.test(m) ? 'spent by the winner' : /held by transaction/.test(m) ? 'held by the other transaction' : m.slice(0, 80)
  return { won, paid, winnerMs: [x, y].filter((o) => o.status).map((o) => o.ms), refused: [x, y].filter((o) => !o.status).map((o) => cause(o.message)) }
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k} ${String(v)}\n`)
  process.exit(0)
}
