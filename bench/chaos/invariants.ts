/**
 * The checks at the end of a chaos run, as a pure function of what was gathered from the nodes
 * (token records, transaction records, chain validations, ledger audits) and of what the client
 * saw, so hand-made states can be fed to it in unit tests.
 */

/** Statuses in which the owner holds a token (it counts toward a balance). */
export const HELD_STATUSES: ReadonlySet<string> = new Set(['Free', 'Locked', 'Pledged'])
/** Transaction statuses of a transfer that has not finished. */
export const OPEN_TX_STATUSES: ReadonlySet<string> = new Set(['preparing', 'signing', 'committing', 'delivery_pending'])

/** One token record as one node stores it. */
export interface TokenView {
  node: string
  tokenId: string
  kind: string
  /** milli-RBT */
  value: number
  owner: string
  status: string
  ftName?: string
  creator?: string
  /** number of the token's latest block as this node knows it (a restored wallet's stale copy stays behind) */
  height?: number
}

/** One transaction record a node keeps for one of its DIDs. */
export interface TxView {
  node: string
  did: string
  txid: string
  memo: string
  status: string
}

/** What the client saw: ok (success), pending (DELIVERY_PENDING: committed at the sender), failed (any other refusal), unknown (the call was cut, e.g. its node was killed). */
export type Outcome = 'ok' | 'pending' | 'failed' | 'unknown'

export interface OpView {
  id: number
  kind: 'rbt' | 'ft' | 'nft'
  memo: string
  from: string
  to: string
  outcome: Outcome
  detail?: string
}

export interface ChaosState {
  /** DIDs hosted by each node */
  hosted: Record<string, string[]>
  tokens: TokenView[]
  txs: TxView[]
  /** invalid chains reported by validate-token-chain, one line each */
  chainProblems: string[]
  /** ledger audit problems per node */
  audits: Record<string, string[]>
}

export interface Expected {
  /** RBT (whole and part tokens) held over all DIDs, milli-RBT */
  rbtMilli: number
  /** FT units per `name@creator` */
  ft: Record<string, number>
  /** NFT ids */
  nfts: string[]
}

export interface Verdict {
  lost: number
  duplicated: number
  stuck: number
  problems: string[]
  counts: { heldTokens: number, rbtMilli: number, ftUnits: number, nfts: number, committedOps: number, refusedOps: number, unknownOps: number, pendingOps: number, staleCopies: number }
}

const short = (s: string): string => s.length > 16 ? `${s.slice(0, 12)}…` : s
export const ftKey = (name: string, creator: string): string => `${name}@${creator}`

export function checkInvariants (s: ChaosState, e: Expected, ops: OpView[]): Verdict {
  const problems: string[] = []
  let lost = 0
  let duplicated = 0
  let stuck = 0

  // ---- who holds each token: a record in a held status, for a DID its node hosts
  const holders = new Map<string, TokenView[]>()
  for (const t of s.tokens) {
    if (!HELD_STATUSES.has(t.status)) continue
    const hosts = new Set(s.hosted[t.node] ?? [])
    if (!hosts.has(t.owner)) {
      problems.push(`node ${t.node} keeps token ${short(t.tokenId)} ${t.status} for ${short(t.owner)}, a DID it does not host`)
      continue
    }
    const list = holders.get(t.tokenId) ?? []
    list.push(t)
    holders.set(t.tokenId, list)
  }
  // A wallet restored on two nodes (the racing owner) keeps a copy of a token it spent from the
  // other node until its node learns of the spend: a copy at an older block is stale, not held. A
  // token held at its latest block by two owners, or by one owner at two different latest blocks of
  // the same number, was spent twice. The same owner at the same block on two nodes is one holding.
  const top = new Map<string, TokenView[]>()
  let staleCopies = 0
  for (const [id, list] of holders) {
    const h = Math.max(...list.map((t) => t.height ?? 0))
    const latest = list.filter((t) => (t.height ?? 0) === h)
    staleCopies += list.length - latest.length
    const distinct = new Set(latest.map((t) => t.owner)).size
    if (distinct > 1 || (latest.length > 1 && list.every((t) => t.height === undefined))) {
      duplicated += Math.max(distinct, latest.length) - 1
      problems.push(`token ${short(id)} held ${latest.length} times: ${latest.map((t) => `${short(t.owner)}@${t.node} ${t.status}`).join(', ')}`)
    }
    top.set(id, latest)
    for (const t of list) {
      if (t.status === 'Locked') {
        stuck++
        problems.push(`token ${short(id)} still Locked by ${short(t.owner)}@${t.node}`)
      }
    }
  }
  const firsts = [...top.values()].map((l) => l[0]!)

  // ---- conservation
  const rbtMilli = firsts.filter((t) => t.kind === 'rbt' || t.kind === 'part').reduce((a, t) => a + t.value, 0)
  if (rbtMilli < e.rbtMilli) { lost++; problems.push(`RBT held over all DIDs: ${rbtMilli / 1000}, minted ${e.rbtMilli / 1000} (${(e.rbtMilli - rbtMilli) / 1000} lost)`) }
  if (rbtMilli > e.rbtMilli) { duplicated++; problems.push(`RBT held over all DIDs: ${rbtMilli / 1000}, minted ${e.rbtMilli / 1000} (${(rbtMilli - e.rbtMilli) / 1000} made up)`) }
  const ft = new Map<string, number>()
  for (const t of firsts) if (t.kind === 'ft') ft.set(ftKey(t.ftName ?? '', t.creator ?? ''), (ft.get(ftKey(t.ftName ?? '', t.creator ?? '')) ?? 0) + 1)
  let ftUnits = 0
  for (const k of new Set([...Object.keys(e.ft), ...ft.keys()])) {
    const want = e.ft[k] ?? 0
    const have = ft.get(k) ?? 0
    ftUnits += have
    if (have < want) { lost += want - have; problems.push(`FT ${short(k)}: ${have} held, ${want} minted`) }
    if (have > want) { duplicated += have - want; problems.push(`FT ${short(k)}: ${have} held, ${want} minted`) }
  }
  const nftHeld = new Set(firsts.filter((t) => t.kind === 'nft').map((t) => t.tokenId))
  for (const id of e.nfts) if (!nftHeld.has(id)) { lost++; problems.push(`NFT ${short(id)} is held by no DID`) }

  // ---- transactions: every decided transfer finished
  const byMemo = new Map<string, TxView[]>()
  const open = new Set<string>()
  for (const t of s.txs) {
    const l = byMemo.get(t.memo) ?? []
    l.push(t)
    byMemo.set(t.memo, l)
    if (OPEN_TX_STATUSES.has(t.status)) open.add(t.txid)
  }
  for (const txid of open) { stuck++; problems.push(`transaction ${short(txid)} has not finished`) }

  // ---- what the client saw
  const counts = { heldTokens: holders.size, rbtMilli, ftUnits, nfts: nftHeld.size, committedOps: 0, refusedOps: 0, unknownOps: 0, pendingOps: 0, staleCopies }
  for (const op of ops) {
    const recs = byMemo.get(op.memo) ?? []
    const atSender = recs.find((t) => t.did === op.from && t.status === 'committed')
    const atReceiver = recs.find((t) => t.did === op.to && t.status === 'committed')
    const committed = atSender !== undefined && atReceiver !== undefined
    const anyCommitted = atSender !== undefined || atReceiver !== undefined
    const label = `op ${op.id} (${op.kind} ${short(op.from)} → ${short(op.to)}, ${op.outcome})`
    if (committed) counts.committedOps++
    switch (op.outcome) {
      case 'ok':
      case 'pending':
        if (op.outcome === 'pending') counts.pendingOps++
        if (atReceiver === undefined) {
          if (recs.some((t) => t.status === 'delivery_pending')) continue // counted with the open transactions
          lost++
          problems.push(`${label} is not committed at the receiver: ${recs.map((t) => `${short(t.did)} ${t.status}`).join(', ') || 'no record'}`)
        } else if (atSender === undefined) {
          problems.push(`${label} is committed at the receiver but not at the sender: ${recs.map((t) => `${short(t.did)} ${t.status}`).join(', ')}`)
        }
        break
      case 'failed':
        counts.refusedOps++
        if (anyCommitted) problems.push(`${label} was refused (${op.detail ?? ''}) but is committed: ${recs.map((t) => `${short(t.did)} ${t.status}`).join(', ')}`)
        break
      case 'unknown':
        counts.unknownOps++
        if (anyCommitted && !committed && !recs.some((t) => t.status === 'delivery_pending')) {
          problems.push(`${label} is committed on one side only: ${recs.map((t) => `${short(t.did)} ${t.status}`).join(', ')}`)
        }
        break
    }
  }

  for (const p of s.chainProblems) problems.push(`chain: ${p}`)
  for (const [node, ps] of Object.entries(s.audits)) for (const p of ps) problems.push(`audit of node ${node}: ${p}`)
  return { lost, duplicated, stuck, problems, counts }
}
