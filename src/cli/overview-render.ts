import type { NodeOverview } from '../api/contract/routes.js'
import type { Painter } from '../util/colour.js'

/** `rbtnode status`: the node overview as a readable summary. */
function duration (s: number): string {
  const d = Math.floor(s / 86_400)
  const h = Math.floor((s % 86_400) / 3600)
  const m = Math.floor((s % 3600) / 60)
  if (d > 0) return `${d}d ${h}h ${m}m`
  if (h > 0) return `${h}h ${m}m`
  return `${m}m ${s % 60}s`
}

const rbt = (n: number): string => `${Number(n.toFixed(3))} RBT`

/** The overview as a readable summary; `p` colours DIDs, ids and amounts at a terminal. */
export function renderOverview (o: NodeOverview, p: Painter): string {
  const lines: string[] = []
  const row = (k: string, v: string): void => { lines.push(`${p.label(k.padEnd(16))}${v}`) }
  row('version', o.version)
  row('peer id', o.peer_id ?? p.dim('core not started'))
  row('uptime', `${duration(o.uptime_s)} (since ${o.started_at})`)
  row('peers', String(o.connected_peers))
  row('quorum', o.quorum.role ? `yes (${o.quorum.dids.length} DID${o.quorum.dids.length === 1 ? '' : 's'}), pledged ${p.amount(rbt(o.quorum.pledged))}` : `no, pledged ${p.amount(rbt(o.quorum.pledged))}`)
  row('quorum list', `${o.quorum.list_size} DID${o.quorum.list_size === 1 ? '' : 's'}`)
  lines.push(p.label(`DIDs (${o.dids.length})`))
  for (const d of o.dids) {
    const extra = [d.rbt.locked > 0 ? `locked ${p.amount(rbt(d.rbt.locked))}` : '', d.rbt.pledged > 0 ? `pledged ${p.amount(rbt(d.rbt.pledged))}` : '', d.rbt.pinned > 0 ? `pinned ${p.amount(rbt(d.rbt.pinned))}` : '', d.quorum ? 'quorum' : '']
      .filter((x) => x !== '').join(', ')
    lines.push(`  ${p.did(d.did)}  ${p.amount(rbt(d.rbt.balance))}${extra !== '' ? `  (${extra})` : ''}`)
  }
  lines.push(p.label(`pending operations (${o.pending_operations.length})`))
  for (const op of o.pending_operations) lines.push(`  ${op.id}  ${op.operation}  ${p.did(op.did)}  ${op.waiting ? 'waiting for an answer' : 'running'}, expires ${op.expires_at}`)
  lines.push(p.label(`transfers in flight (${o.transfers_in_flight.length})`))
  for (const t of o.transfers_in_flight) lines.push(`  ${p.txid(t.transactionID)}  ${t.status}  ${p.amount(rbt(t.amount))} to ${p.did(t.receiver)}  since ${t.started_at}`)
  lines.push(p.label(`last errors (${o.last_errors.length})`))
  for (const e of o.last_errors) lines.push(`  ${e.time} ${e.level} ${e.component !== undefined ? e.component + ': ' : ''}${e.msg}`)
  return lines.join('\n')
}
