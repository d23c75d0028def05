/** How `rbtnode testnet` shows itself: phase lines and a start bar at a terminal, plain lines otherwise, the node table. */
import type { Painter } from '../util/colour.js'
import type { NodeRow, TestnetProgress, TestnetSummary } from '../testnet/testnet.js'

/**
 * Progress on stderr. At a terminal: one line per phase, ticked with its seconds when done, and a
 * bar while the nodes start. Otherwise: a plain line per phase start and end.
 */
export function testnetProgress (write: (s: string) => void, tty: boolean, paint: Painter): TestnetProgress {
  const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`
  if (!tty) {
    return {
      phase: (name) => { write(`${name}…\n`) },
      phaseDone: (name, ms) => { write(`${name}: done in ${secs(ms)}\n`) },
      nodesStarted: () => {}
    }
  }
  let current = ''
  return {
    phase: (name) => { current = name; write(`  ${paint.dim('…')} ${name}`) },
    phaseDone: (name, ms) => { write(`\r\x1b[K  ${paint.level('INFO', '✓')} ${name} ${paint.dim(`(${secs(ms)})`)}\n`) },
    nodesStarted: (done, total) => {
      const width = 24
      const filled = Math.round(width * done / Math.max(total, 1))
      write(`\r\x1b[K  ${paint.dim('…')} ${current} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total}`)
    }
  }
}

function pad (s: string, n: number): string { return s + ' '.repeat(Math.max(0, n - s.length)) }

/** The node table: node, API URL, peer id, DID, balance. */
export function nodeTable (rows: readonly NodeRow[], paint: Painter): string {
  const head = ['NODE', 'API', 'PEER ID', 'DID', 'RBT']
  const cells = rows.map((r) => [r.name, r.api, r.peerId, r.did, r.running ? (r.balance !== undefined ? r.balance.toFixed(3) : '?') : 'down'])
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)))
  const line = (c: string[], colour: boolean): string => c.map((v, i) => {
    const p = pad(v, widths[i])
    if (!colour) return p
    return i === 3 ? paint.did(p) : i === 4 ? paint.amount(p) : p
  }).join('  ').trimEnd()
  return [paint.label(line(head, false)), ...cells.map((c) => line(c, true))].join('\n')
}

/** The table, the password and the commands to paste. */
export function summaryText (s: TestnetSummary, paint: Painter): string {
  return [
    nodeTable(s.nodes, paint),
    '',
    `${paint.label('Password')} of every DID: ${s.password}`,
    '',
    paint.label('Transfer 1 RBT from user-1 to user-2:'),
    `  ${s.commands.transfer}`,
    paint.label('Then the receiver\'s balance:'),
    `  ${s.commands.balance}`,
    '',
    paint.dim(`Ctrl-C stops the network; \`rbtnode testnet -p ${s.dir}\` starts it again with its state.`)
  ].join('\n')
}
