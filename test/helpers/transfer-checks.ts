import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import type { TokenListItemResult } from '../../src/api/contract/token-results.js'
import { sha3 } from '../../src/wallet/bytes.js'
import { DAG_PB_CODE, SHA3_256_CODE, isValidDid } from '../../src/wallet/did-string.js'
import { NodeProcess } from './node-process.js'
import { FIXTURE_ENV, type QuorumNetwork } from './quorum-network.js'
import { waitFor } from './wait.js'

/** A DID and the node that hosts it. */
export interface Party { node: NodeProcess, did: string }

export interface Holding { free: number, locked: number, pledged: number, tokens: TokenListItemResult[] }

/** Token statuses in which the DID still owns the token. */
const HELD = new Set(['Free', 'Locked', 'Pledged'])

const milli = (rbt: number): number => Math.round(rbt * 1000)

/** Balance (milli-RBT) and tokens of a DID, as its own node reports them. */
export async function holding (p: Party): Promise<Holding> {
  type Bal = { balance: number, locked: number, pledged: number }
  const r = (await p.node.client.call('didBalancesRbt', { params: { did: p.did } })).result as unknown as Bal | Bal[]
  const bal = Array.isArray(r) ? r[0] : r
  const tokens = (await p.node.client.call('tokensList', { query: { did: p.did, type: 'rbt' } })).result ?? []
  return { free: milli(bal.balance), locked: milli(bal.locked), pledged: milli(bal.pledged), tokens }
}

export async function freeMilli (p: Party): Promise<number> { return (await holding(p)).free }

/** Free + locked + pledged milli-RBT over all parties. */
export async function totalMilli (parties: Party[]): Promise<number> {
  let sum = 0
  for (const p of parties) { const h = await holding(p); sum += h.free + h.locked + h.pledged }
  return sum
}

/**
 * Problems with the parties' view of the ledger, or [] when it has settled: every party's total
 * (free, locked, pledged) as expected, nothing Locked, and no token held by two parties.
 */
export async function ledgerProblems (parties: Party[], expectedMilli: Map<string, number> | number, quorums: Party[] = []): Promise<string[]> {
  const problems: string[] = []
  const owners = new Map<string, string>()
  let sum = 0
  for (const p of parties) {
    const h = await holding(p)
    const total = h.free + h.locked + h.pledged
    sum += total
    if (h.locked !== 0) problems.push(`${p.did.slice(0, 14)}… still has ${h.locked / 1000} RBT locked`)
    if (typeof expectedMilli !== 'number' && expectedMilli.has(p.did) && expectedMilli.get(p.did) !== total) {
      problems.push(`${p.did.slice(0, 14)}… holds ${total / 1000} RBT, expected ${(expectedMilli.get(p.did) ?? 0) / 1000}`)
    }
    const heldValue = h.tokens.filter((t) => HELD.has(t.token_status)).reduce((s, t) => s + milli(t.token_value), 0)
    if (heldValue !== total) problems.push(`${p.did.slice(0, 14)}…: tokens add up to ${heldValue / 1000} RBT, balance says ${total / 1000}`)
    for (const t of h.tokens) {
      if (!HELD.has(t.token_status)) continue
      const other = owners.get(t.token_id)
      if (other !== undefined && other !== p.did) problems.push(`token ${t.token_id} is held by both ${other.slice(0, 14)}… and ${p.did.slice(0, 14)}…`)
      owners.set(t.token_id, p.did)
    }
  }
  if (typeof expectedMilli === 'number' && sum !== expectedMilli) problems.push(`the parties hold ${sum / 1000} RBT in all, expected ${expectedMilli / 1000}`)
  for (const q of quorums) {
    const h = await holding(q)
    if (h.locked !== 0) problems.push(`quorum ${q.did.slice(0, 14)}… still has ${h.locked / 1000} RBT locked`)
  }
  return problems
}

/** Polls until ledgerProblems() is empty; fails with the last problems seen. */
export async function waitSettled (parties: Party[], expectedMilli: Map<string, number> | number, opts: { quorums?: Party[], timeoutMs?: number, what?: string } = {}): Promise<void> {
  let last: string[] = []
  await waitFor(async () => {
    last = await ledgerProblems(parties, expectedMilli, opts.quorums)
    return last.length === 0
  }, { timeoutMs: opts.timeoutMs ?? 45_000, intervalMs: 250, what: opts.what ?? 'the ledger to settle' }).catch((e) => {
    throw new Error(`${(e as Error).message}; still: ${last.join('; ')}`)
  })
}

/** The quorum DIDs of the fixture as parties (their own nodes report them). */
export function quorumParties (net: QuorumNetwork): Party[] {
  return net.quorums.map((node, i) => ({ node, did: net.quorumDids[i] }))
}

/** Waits until `from` reaches every given quorum DID over the network and finds it set up. */
export async function waitQuorumsReachable (from: NodeProcess[], quorumDids: string[], timeoutMs = 30_000): Promise<void> {
  await waitFor(async () => {
    for (const n of from) {
      for (const did of quorumDids) {
        const env = await n.client.envelope('quorumsStatus', { query: { quorumAddress: did } })
        if (!env.status) return false
      }
    }
    return true
  }, { timeoutMs, intervalMs: 200, what: 'the quorums to be reachable and set up' })
}

/** A well-formed DID that no node hosts. */
export function unhostedDid (): string {
  const cid = CID.createV1(DAG_PB_CODE, Digest.create(SHA3_256_CODE, sha3(randomBytes(32)))).toString()
  if (!isValidDid(cid)) throw new Error(`made an invalid DID ${cid}`)
  return cid
}

/** A node process on the fixture's network settings, with extra environment. */
export function extraNode (n: number, env: Record<string, string> = {}, dir?: string, ports?: { apiPort: number, swarmPort: number }): NodeProcess {
  return new NodeProcess({ n, dir, extraArgs: ['-testNet'], env: { ...FIXTURE_ENV, ...env }, ...(ports ?? {}) })
}

/** Same data dir and ports as `p`, other environment (e.g. with a fault armed). */
export function sameNode (p: NodeProcess, env: Record<string, string> = {}): NodeProcess {
  return new NodeProcess({ ...p.opts, dir: p.dir, apiPort: p.apiPort, swarmPort: p.swarmPort, env: { ...FIXTURE_ENV, ...env } })
}
